"""RLOO as a new algorithm, outside the package: docs/adding-an-algorithm.md's worked example.

REINFORCE leave-one-out (Ahmadian et al., 2024): each response's baseline is the
mean reward of the other N - 1 responses to its prompt,

  A_i = r_i - (1 / (N - 1)) Σ_{j≠i} r_j = N / (N - 1) · (r_i - mean r),

or, with its knob `leave_out=False`, the mean of all N (A_i = r_i - mean r);
standardised over the group with `normalize` (then either equals GRPO's). Named
by a config as algorithm.name='rloo_algorithm:rloo' with this directory on
PYTHONPATH, or registered under a name with `algorithms.register("rloo", rloo)`.
"""

import jax.numpy as jnp

from polyepo.core import advantages
from polyepo.rl import algorithms


def rloo(leave_out: bool = True, normalize: bool = False,
         normalize_over: str = "prompt") -> algorithms.Algorithm:
  """RLOO; `leave_out`: each response's baseline leaves it out (else the group's mean)."""

  def advantage(rewards, labels, key, normalize):
    """f32[N] rewards (labels and key unused) -> f32[N] advantages."""
    del labels, key
    n = rewards.shape[0]
    baseline = (jnp.sum(rewards) - rewards) / (n - 1) if leave_out else jnp.mean(rewards)
    a = rewards - baseline
    return advantages.normalize_advantage(a) if normalize else a
  return algorithms.group("rloo", advantage, normalize=normalize, normalize_over=normalize_over)
