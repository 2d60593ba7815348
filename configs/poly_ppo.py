"""Poly-PPO (Ibn Hamid et al., *Set Reinforcement Learning: Principles and Approaches*,
§6.1, Algorithm 2): set advantages with the polychromic objective at
rollout states (the prompt and vine states at step boundaries), GAE from a critic
elsewhere (see configs/base.py for the fields).

Default cost: K = 2 states x N_v = 8 vines per prompt add 16 responses to the
N = 16 roots, each a continuation (shorter than a root); the critic reads the
sampler's features and the policy's surprise at the tokens so far (value_model
"surprise", as for configs/ppo.py), so the values cost no forward pass. Measured
at equal root batch: about 2.2 Poly-EPO steps (`python -m bench.train_step
--poly-ppo`).
"""

from configs import base


def get_config(arg=None):
  return base.get_config(arg, name="poly_ppo", algorithm="poly_ppo",
                         objective="polychromic", critic={"model": "surprise"})
