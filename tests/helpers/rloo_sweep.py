"""Two learning rates of RLOO (tests/helpers/rloo.py) on multiplication, size=smoke."""

from configs.sweeps import headline


def get_sweep(arg=None):
  return headline.one_knob_sweep(arg or "domains=multiplication,size=smoke,seeds=2",
                                 "tests/helpers/rloo.py", "train.learning_rate", (1e-5, 1e-4))
