"""Helpers shared by the config files (they import only ml_collections)."""

import ml_collections

DOMAINS = ("multiplication", "polynomial_roots")
SIZES = ("smoke", "default", "paper")

# Pretraining corpus mixture per domain, in the env's strategy order. Skewed like
# a real base model: one dominant strategy, a middle, and a tail with one strategy
# under 1% and one under 0.3% of the corpus (shares measured after restricting
# each problem to the strategies that apply to it):
#   multiplication: long_by_b 54%, long_by_a 17%, place_value 14.5%, round_adjust
#     7.3%, difference_of_squares 4.4%, halve_double 2.4%, factor_out 0.45%,
#     karatsuba 0.18%.
#   polynomial_roots: factor 48%, integer_scan 16%, quadratic_formula 16%,
#     rational_root 10%, vieta_pairs 5.9%, complete_square 3.0%, grouping 0.86%,
#     depressed_cubic 0.25%.
# Pretraining length and slip rate per domain. Polynomial traces are short and
# easy to learn: after 700 steps with 15% slips its base model was right 80% of
# the time on `test` (the rate of slip-free demonstrations caps it), too strong
# a start for RL, so it trains shorter on more slips.
PRETRAIN_STEPS = {"multiplication": 700, "polynomial_roots": 450}
SLIP_RATES = {"multiplication": 0.15, "polynomial_roots": 0.35}

MIXTURES = {
    "multiplication": (45.0, 15.0, 12.0, 10.0, 8.0, 6.0, 0.8, 0.2),
    "polynomial_roots": (40.0, 20.0, 8.0, 10.0, 12.0, 15.0, 6.0, 2.0),
}


def parse_arg(arg, **defaults):
  """Parses a config string "k1=v1,k2=v2" into a ConfigDict over `defaults`.

  Unknown keys and values outside the known choices fail here, naming them.
  """
  result = ml_collections.ConfigDict(defaults)
  for item in filter(None, (arg or "").split(",")):
    key, sep, value = item.partition("=")
    if not sep:
      raise ValueError(f"Config string item {item!r} is not of the form key=value.")
    if key not in defaults:
      raise ValueError(f"Unknown config string key {key!r}; valid keys: {', '.join(defaults)}.")
    result[key] = type(defaults[key])(value)
  if "domain" in result and result.domain not in DOMAINS:
    raise ValueError(f"domain={result.domain!r} is not one of: {', '.join(DOMAINS)}.")
  if "size" in result and result.size not in SIZES:
    raise ValueError(f"size={result.size!r} is not one of: {', '.join(SIZES)}.")
  return result
