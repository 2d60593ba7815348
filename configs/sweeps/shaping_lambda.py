r"""Reward shaping's diversity weight λ ∈ {0.1, 0.3, 1, 3}.

  python -m experiments.sweep --sweep=configs/sweeps/shaping_lambda.py
  python -m experiments.sweep --sweep=configs/sweeps/shaping_lambda.py:domains=multiplication

Given this sweep's directory as well as the headline's, the report's reward-shaping
row uses the best λ per domain (highest final `test` pass@32 among the λ runs):
  python -m experiments.report runs/sweeps/headline runs/sweeps/shaping_lambda

Config string: domains=all|multiplication|polynomial_roots, size=..., seeds=3.
"""

from configs import common
from configs.sweeps import headline

LAMBDAS = (0.1, 0.3, 1.0, 3.0)


def get_sweep(arg=None):
  args = common.parse_arg(arg, domains="all", size="default", seeds=3)
  domains = headline.domains(args.domains)
  shared = headline.shared_overrides(args.seeds, args.size)
  return [("configs/reward_shaping.py", f"domain={domain},size={args.size}",
           dict(shared, **{"train.lam": lam}))
          for domain in domains for lam in LAMBDAS]
