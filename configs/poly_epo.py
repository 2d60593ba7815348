"""Poly-EPO: set RL with the polychromic objective (see configs/base.py for the fields)."""

from configs import base


def get_config(arg=None):
  return base.get_config(arg, name="poly_epo", algorithm="set_rl", objective="polychromic")
