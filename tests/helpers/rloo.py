"""RLOO (tests/helpers/rloo_estimator.py): docs/adding-an-algorithm.md's worked example config.

  PYTHONPATH=tests/helpers python -m experiments.synthetic --config=tests/helpers/rloo.py
"""

from configs import base


def get_config(arg=None):
  return base.get_config(arg, name="rloo", estimator="rloo_estimator:RLOO", normalize=False)
