"""RLOO (tests/helpers/rloo.py) with its own knob, leave_out, both ways, on
multiplication at size=smoke: each run sets it on its command line
(--config.algorithm.leave_out=...)."""

from configs.sweeps import headline


def get_sweep(arg=None):
  return headline.one_knob_sweep(arg or "domains=multiplication,size=smoke,seeds=2",
                                 "tests/helpers/rloo.py", "algorithm.leave_out", (True, False))
