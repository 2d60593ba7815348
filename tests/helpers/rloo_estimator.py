"""RLOO as a new estimator, outside the package: docs/adding-an-algorithm.md's worked example.

REINFORCE leave-one-out (Ahmadian et al., 2024): each response's baseline is the
mean reward of the other N - 1 responses to its prompt,

  A_i = r_i - (1 / (N - 1)) Σ_{j≠i} r_j = N / (N - 1) · (r_i - mean r),

standardised over the group with `normalize` (then it equals GRPO's). Named by
a config as estimator='rloo_estimator:RLOO' with this directory on PYTHONPATH,
or registered under a name with `estimators.register(RLOO)`.
"""

import jax.numpy as jnp

from polyepo.core import advantages
from polyepo.rl import estimators


def rloo_advantage(config, rewards, labels, key, normalize):
  """f32[N] rewards (labels and key unused) -> f32[N] leave-one-out advantages."""
  del config, labels, key
  n = rewards.shape[0]
  a = rewards - (jnp.sum(rewards) - rewards) / (n - 1)
  return advantages.normalize_advantage(a) if normalize else a


RLOO = estimators.group_estimator("rloo", rloo_advantage)
