"""Windowed Poly-EPO: the polychromic set advantage on each response's first reasoning
step (the tokens that choose its strategy, up to its first step boundary), GRPO's
reward advantage on the rest (`polyepo.rl.algorithms.windowed`). The fields this
config sets (each documented in its factory, polyepo.rl.algorithms):

  algorithm.name   set_rl_windowed: needs a domain with step boundaries (every kit domain)
  algorithm.first  set_rl with objective polychromic (Poly-EPO's), standardised over
                   each prompt's group
  algorithm.rest   grpo, standardised over each prompt's group
"""

from configs import base


def get_config(arg=None):
  return base.get_config(arg, name="poly_epo_windowed", algorithm="set_rl_windowed",
                         first={"name": "set_rl", "objective": "polychromic",
                                "normalize": True},
                         rest={"name": "grpo", "normalize": True})
