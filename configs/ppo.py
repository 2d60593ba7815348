"""PPO with a critic: GAE from a value head, no vines, no set objective (the standard-RL
baseline of note §6.1; see configs/base.py for the fields)."""

from configs import base


def get_config(arg=None):
  return base.get_config(arg, name="ppo", estimator="ppo")
