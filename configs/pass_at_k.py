"""pass@k training: set RL with f = max reward over the set (see configs/base.py)."""

from configs import base


def get_config(arg=None):
  return base.get_config(arg, name="pass_at_k", algorithm="set_rl", objective="pass_at_n")
