r"""Poly-EPO's set size n ∈ {2, 4, 8} (N = 16 samples per prompt; not for size=smoke,
whose N = 4).

  python -m experiments.sweep --sweep=configs/sweeps/set_size.py

Config string: domains=all|multiplication|polynomial_roots, size=..., seeds=3.
"""

from configs.sweeps import headline

SET_SIZES = (2, 4, 8)


def get_sweep(arg=None):
  return headline.one_knob_sweep(arg, "configs/poly_epo.py", "algorithm.set_size", SET_SIZES)
