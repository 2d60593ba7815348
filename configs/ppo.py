"""PPO with a critic: GAE from a value head, no vines, no set objective (the standard-RL
baseline of §6.1 of Ibn Hamid et al., *Set Reinforcement Learning: Principles and
Approaches*; see configs/base.py for the fields).

The critic reads the policy's surprise besides its hidden states (value_model
"surprise", `polyepo.value_head`): it explains several times more of the returns'
variance than a head on the hidden states alone (docs/method.md, "How good a
critic can be here").
"""

from configs import base


def get_config(arg=None):
  return base.get_config(arg, name="ppo", algorithm="ppo",
                         critic={"model": "surprise"})
