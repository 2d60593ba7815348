"""Windowed Poly-EPO: the polychromic set advantage on each response's first reasoning
step (the tokens that choose its strategy, up to its first step boundary), GRPO's
reward advantage on the rest (`polyepo.estimators.windowed_advantages`). Each field is
documented in polyepo.train.TrainConfig; the ones this config sets:

  estimator  set_rl_windowed: needs a domain with step boundaries (every kit domain)
  objective  polychromic: the set advantage's objective (Poly-EPO's)
  normalize  True: both advantages are standardised over each prompt's group
"""

from configs import base


def get_config(arg=None):
  return base.get_config(arg, name="poly_epo_windowed", estimator="set_rl_windowed",
                         objective="polychromic", normalize=True)
