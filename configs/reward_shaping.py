"""Reward shaping: GRPO on r_i + λ d_i (see configs/base.py for the fields)."""

from configs import base


def get_config(arg=None):
  return base.get_config(arg, name="reward_shaping", algorithm="reward_shaping", lam=0.3)
