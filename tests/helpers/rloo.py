"""RLOO (tests/helpers/rloo_algorithm.py): docs/adding-an-algorithm.md's worked example config.

  PYTHONPATH=tests/helpers python -m experiments.synthetic --config=tests/helpers/rloo.py \
      --config.algorithm.leave_out=False
"""

from configs import base


def get_config(arg=None):
  return base.get_config(arg, name="rloo", algorithm="rloo_algorithm:rloo")
