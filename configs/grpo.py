"""GRPO: group-normalised reward advantages (see configs/base.py for the fields)."""

from configs import base


def get_config(arg=None):
  return base.get_config(arg, name="grpo", algorithm="grpo")
