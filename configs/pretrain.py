r"""Pretraining the base model.

  python -m experiments.pretrain --config=configs/pretrain.py:domain=multiplication
  python -m experiments.pretrain --config=configs/pretrain.py:domain=polynomial_roots,size=smoke

size=default takes 13 minutes (multiplication) or 10 (polynomial roots) on a 2-core Xeon, plus
a minute or two for the report; size=smoke in under a minute
(tests use it). Defaults are written once, in the dataclasses the fields unpack
into (polyepo.model.TransformerConfig, polyepo.pretrain.PretrainConfig); this file
lists and comments every field, and sets the per-domain values and the sizes.
"""

import dataclasses

import ml_collections

from configs import choices
from polyepo import model, pretrain

# Two stages (polyepo.pretrain): a balanced competence stage that teaches every
# strategy, then a short preference stage on a skewed mixture, trained on the
# responses' openings only, that sets which strategy the model starts.
#
# Competence mixture: every applicable strategy about equally likely; in
# multiplication the two long multiplications (learned first) get less weight
# than the strategies whose traces are harder to learn.
MIXTURES = {
    "multiplication": (1.0, 1.0, 1.5, 2.0, 1.5, 3.0, 3.0, 2.0),
    "polynomial_roots": (1.0,) * 8,
}
# Preference mixture per domain, in the env's strategy order: one dominant
# strategy, a middle and a tail. Shares of the corpus once each problem is
# restricted to the strategies that apply (training problems):
#   multiplication: long_by_b 55%, long_by_a 22%, place_value 13%, round_adjust
#     5.4%, difference_of_squares 2.6%, halve_double 0.88%, factor_out 0.70%,
#     karatsuba 0.01%.
#   polynomial_roots: factor 58%, quadratic_formula 16%, integer_scan 13%,
#     rational_root 7.2%, vieta_pairs 4.0%, complete_square 1.6%, grouping
#     0.48%, depressed_cubic 0.13%.
PREFERENCES = {
    "multiplication": (50.0, 20.0, 12.0, 8.0, 5.0, 2.0, 1.0, 0.01),
    "polynomial_roots": (45.0, 20.0, 4.0, 6.0, 8.0, 15.0, 3.0, 1.0),
}
# Stage lengths, the competence stage's slip rate and the weight decay (both
# stages) per domain. Multiplication's long traces are the hard part (its accuracy
# is bounded by learning). Polynomial traces are learned quickly on training
# problems, but the training distribution holds only 1,214 distinct problems and
# at weight decay 0.01 the model memorises them (forced accuracy 0.70-0.89 on
# training problems, 0.06-0.56 on test); weight decay 1.0 narrows the gap and
# makes 6 strategies competent on test (see the README's "The base models").
PRETRAIN_STEPS = {"multiplication": 1350, "polynomial_roots": 1000}
# Multiplication's preference stage is long: its rarest strategy's share falls
# ever more slowly (karatsuba 0.34% of test samples after 150 steps, 0.28% after
# 300, 0.13% after 900; see the README's "The base model").
PREFERENCE_STEPS = {"multiplication": 900, "polynomial_roots": 150}
SLIP_RATES = {"multiplication": 0.05, "polynomial_roots": 0.1}
WEIGHT_DECAYS = {"multiplication": 0.01, "polynomial_roots": 1.0}

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
#   mixture          competence stage: weight per strategy (MIXTURES)
#   slip_rate        competence stage: share of demonstrations with a slip (per domain)
#   num_steps        competence stage: optimiser steps (per domain; ~0.4 s each
#                    on 2 cores)
#   preference_mixture        preference stage: weight per strategy (PREFERENCES)
#   preference_steps          preference stage: optimiser steps (0: no stage)
#   preference_learning_rate  preference stage: peak AdamW learning rate
#   batch_size       demonstrations per step
#   learning_rate    peak AdamW learning rate
#   warmup_steps     linear warm-up, then cosine decay
#   end_lr_ratio     final / peak learning rate
#   weight_decay     AdamW weight decay (per domain)
#   grad_clip        global-norm clipping
#   steps_per_chunk  steps per compiled chunk (progress granularity)
#   microbatch_rows  gradient accumulated over micro-batches of at most this many
#                    demonstrations (batch_size or more: all at once; 0: by
#                    platform, 32 on a CPU, the whole batch on an accelerator);
#                    the same model to float rounding, so not part of the base
#                    model's cache key


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
      num_steps=PRETRAIN_STEPS[args.domain], preference_mixture=PREFERENCES[args.domain],
      preference_steps=PREFERENCE_STEPS[args.domain],
      weight_decay=WEIGHT_DECAYS[args.domain])))  # fields above

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
  config.report.forced_problems = 64  # forced-strategy accuracy: problems per strategy
  config.report.forced_samples = 16   # ... and completions per problem

  if args.size == "smoke":
    config.model.width = 32
    config.model.num_layers = 1
    config.model.num_heads = 2
    config.pretrain.batch_size = 32
    config.pretrain.num_steps = 20
    config.pretrain.preference_steps = 10
    config.pretrain.steps_per_chunk = 10
    config.report.num_problems = 8
    config.report.num_samples = 4
    config.report.forced_problems = 2
    config.report.forced_samples = 2
  return config
