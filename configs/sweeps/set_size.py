r"""Poly-EPO's set size n ∈ {2, 4, 8} (N = 16 samples per prompt; not for size=smoke,
whose N = 4).

  python -m experiments.sweep --sweep=configs/sweeps/set_size.py

Config string: domains=all|multiplication|polynomial_roots, size=..., seeds=3.
"""

from configs import common
from configs.sweeps import headline

SET_SIZES = (2, 4, 8)


def get_sweep(arg=None):
  args = common.parse_arg(arg, domains="all", size="default", seeds=3)
  domains = headline.domains(args.domains)
  shared = headline.shared_overrides(args.seeds, args.size)
  return [("configs/poly_epo.py", f"domain={domain},size={args.size}",
           dict(shared, **{"train.set_size": n}))
          for domain in domains for n in SET_SIZES]
