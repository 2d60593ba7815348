r"""Reward shaping's diversity weight λ ∈ {0.1, 0.3, 1, 3}.

  python -m experiments.sweep --sweep=configs/sweeps/shaping_lambda.py
  python -m experiments.sweep --sweep=configs/sweeps/shaping_lambda.py:domains=multiplication

Given this sweep's directory as well as the headline's, the report's reward-shaping
row uses the best λ per domain (highest final `test` pass@32 among the λ runs):
  python -m experiments.report runs/sweeps/headline runs/sweeps/shaping_lambda

Config string: domains=all|multiplication|polynomial_roots, size=..., seeds=3.
"""

from configs.sweeps import headline

LAMBDAS = (0.1, 0.3, 1.0, 3.0)


def get_sweep(arg=None):
  return headline.one_knob_sweep(arg, "configs/reward_shaping.py", "train.lam", LAMBDAS)
