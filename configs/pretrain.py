r"""Pretraining the base model.

  python -m experiments.pretrain --config=configs/pretrain.py:domain=multiplication
  python -m experiments.pretrain --config=configs/pretrain.py:domain=polynomial_roots,size=smoke

size=default fits in about 10 minutes on a 2-core CPU; size=smoke in under a minute
(tests use it).
"""

import ml_collections

from configs import common


def get_config(arg=None):
  args = common.parse_arg(arg, domain="multiplication", size="default")
  config = ml_collections.ConfigDict()
  config.domain = args.domain        # which synthetic domain (envs.make name)
  config.env = ml_collections.ConfigDict()  # shape-fixing env kwargs, e.g. digits_a=2
  config.seed = 0                    # PRNG seed of the pretraining run

  # The transformer policy (polyepo.model.TransformerConfig fields).
  config.model = ml_collections.ConfigDict()
  config.model.width = 128           # residual width
  config.model.num_layers = 3        # transformer blocks
  config.model.num_heads = 4         # query heads
  config.model.num_kv_heads = 1      # key/value heads (1 = multi-query attention)
  config.model.mlp_ratio = 4         # MLP hidden width / width
  config.model.activation = "relu"   # relu | gelu | silu

  # Supervised training on demonstrations (polyepo.pretrain.PretrainConfig fields).
  config.pretrain = ml_collections.ConfigDict()
  config.pretrain.mixture = common.MIXTURES[args.domain]  # weight per strategy
  config.pretrain.slip_rate = common.SLIP_RATES[args.domain]  # share of demonstrations
                                     # with an arithmetic slip
  config.pretrain.batch_size = 256   # demonstrations per step
  config.pretrain.num_steps = common.PRETRAIN_STEPS[args.domain]  # optimiser steps
                                     # (~0.75-1 s each on 2 cores)
  config.pretrain.learning_rate = 3e-3  # peak AdamW learning rate
  config.pretrain.warmup_steps = 50  # linear warm-up, then cosine decay
  config.pretrain.end_lr_ratio = 0.05   # final / peak learning rate
  config.pretrain.weight_decay = 0.01
  config.pretrain.grad_clip = 1.0    # global-norm clipping
  config.pretrain.steps_per_chunk = 50  # steps per compiled chunk (progress granularity)

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
