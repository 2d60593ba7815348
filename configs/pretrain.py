r"""Pretraining the base model.

  python -m experiments.pretrain --config=configs/pretrain.py:domain=multiplication
  python -m experiments.pretrain --config=configs/pretrain.py:domain=polynomial_roots,size=smoke

size=default fits in about 10 minutes on a 2-core CPU; size=smoke in under a minute
(tests use it). Defaults are written once, in the dataclasses the fields unpack
into (polyepo.model.TransformerConfig, polyepo.pretrain.PretrainConfig); this file
lists and comments every field, and sets the per-domain values and the sizes.
"""

import dataclasses

import ml_collections

from configs import choices
from polyepo import model, pretrain

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
MIXTURES = {
    "multiplication": (45.0, 15.0, 12.0, 10.0, 8.0, 6.0, 0.8, 0.2),
    "polynomial_roots": (40.0, 20.0, 8.0, 10.0, 12.0, 15.0, 6.0, 2.0),
}
# Pretraining length and slip rate per domain. Polynomial traces are short and
# easy to learn: after 700 steps with 15% slips its base model was right 80% of
# the time on `test` (the rate of slip-free demonstrations caps it), too strong
# a start for RL, so it trains shorter on more slips.
PRETRAIN_STEPS = {"multiplication": 700, "polynomial_roots": 450}
SLIP_RATES = {"multiplication": 0.15, "polynomial_roots": 0.35}

# The transformer policy: these fields of polyepo.model.TransformerConfig, at its
# defaults (vocabulary, special tokens and max_len come from the env):
#   width          residual width
#   num_layers     transformer blocks
#   num_heads      query heads
#   num_kv_heads   key/value heads (1 = multi-query attention)
#   mlp_ratio      MLP hidden width / width
#   activation     relu | gelu | silu
MODEL_FIELDS = ("width", "num_layers", "num_heads", "num_kv_heads", "mlp_ratio", "activation")

# Supervised training on demonstrations: the fields of polyepo.pretrain.PretrainConfig,
# at its defaults except the per-domain ones:
#   mixture          weight per strategy (per domain, MIXTURES)
#   slip_rate        share of demonstrations with an arithmetic slip (per domain)
#   num_steps        optimiser steps (per domain; ~0.75-1 s each on 2 cores)
#   batch_size       demonstrations per step
#   learning_rate    peak AdamW learning rate
#   warmup_steps     linear warm-up, then cosine decay
#   end_lr_ratio     final / peak learning rate
#   weight_decay     AdamW weight decay
#   grad_clip        global-norm clipping
#   steps_per_chunk  steps per compiled chunk (progress granularity)


def get_config(arg=None):
  args = choices.parse_arg(arg, domain="multiplication", size="default")
  config = ml_collections.ConfigDict()
  config.domain = args.domain        # which synthetic domain (envs.make name)
  config.env = ml_collections.ConfigDict()  # shape-fixing env kwargs, e.g. digits_a=2
  config.seed = 0                    # PRNG seed of the pretraining run

  defaults = model.TransformerConfig()  # fields above
  config.model = ml_collections.ConfigDict({f: getattr(defaults, f) for f in MODEL_FIELDS})
  config.pretrain = ml_collections.ConfigDict(dataclasses.asdict(pretrain.PretrainConfig(
      mixture=MIXTURES[args.domain], slip_rate=SLIP_RATES[args.domain],
      num_steps=PRETRAIN_STEPS[args.domain])))  # fields above

  # Where the base model lives. Empty checkpoint: a cache directory keyed by a
  # hash of everything above, reused by later runs.
  config.checkpoint = ""             # explicit base-model directory (overrides the cache)
  config.cache_dir = ""              # default: $POLYEPO_CACHE or ~/.cache/polyepo

  # Base-model report on the TFDS eval splits.
  config.report = ml_collections.ConfigDict()
  config.report.splits = ("test", "ood")
  config.report.num_problems = 256   # problems per split
  config.report.num_samples = 64     # samples per problem (pass@k for k = 1..64)
  config.report.temperature = 1.0

  if args.size == "smoke":
    config.model.width = 32
    config.model.num_layers = 1
    config.model.num_heads = 2
    config.pretrain.batch_size = 32
    config.pretrain.num_steps = 20
    config.pretrain.steps_per_chunk = 10
    config.report.num_problems = 8
    config.report.num_samples = 4
  return config
