r"""Pretraining the base model.

  python -m experiments.pretrain --config=configs/pretrain.py:domain=multiplication
  python -m experiments.pretrain --config=configs/pretrain.py:domain=polynomial_roots,size=smoke

Both sizes of both domains have a shipped base model (results/base/), which is
restored; with --config.shipped=false, or a config no shipped model matches,
size=default pretrains the base model the experiments use, then writes its
report; size=smoke a small one for the tests (run times: docs/base-models.md,
docs/performance.md). Defaults are written once, in the dataclasses the fields unpack
into (polyepo.model.TransformerConfig, polyepo.pretrain.PretrainConfig); this file
lists and comments every field, reads the per-domain values from the env class
(`domain_defaults`) and sets the sizes.
"""

import dataclasses

import ml_collections

import envs
from configs import choices
from polyepo.policy import model
from polyepo.pretraining import pretrain

# Two stages (polyepo.pretrain): a balanced competence stage that teaches every
# strategy, then a short preference stage on a skewed mixture, trained on the
# responses' openings only, that sets which strategy the model starts.
#
# The per-domain values (the two mixtures, the stages' lengths, the slip rate,
# the weight decay, ...) are declared beside each env class, with the reasons
# for them: its `pretrain_defaults`, a dict of polyepo.pretrain.PretrainConfig
# fields (envs/multiplication/env.py, envs/polynomial_roots/env.py). A field a
# domain does not declare takes FALLBACKS, else the PretrainConfig default.
FALLBACKS = dict(
    mixture=None,             # None: uniform, weight 1 for every strategy
    slip_rate=0.05,           # multiplication's
    num_steps=1000,           # a first try for a new domain
    preference_mixture=(),    # with preference_steps=0: no preference stage
    preference_steps=0,
)


def domain_defaults(domain):
  """The PretrainConfig fields `domain` declares (`pretrain_defaults` on its env
  class) over FALLBACKS; a uniform mixture where it declares none.

  Raises:
    ValueError: naming a declared field that PretrainConfig does not have.
  """
  env_class = envs.get_class(domain)
  declared = dict(getattr(env_class, "pretrain_defaults", None) or {})
  fields = [f.name for f in dataclasses.fields(pretrain.PretrainConfig)]
  unknown = sorted(set(declared) - set(fields))
  if unknown:
    raise ValueError(f"{env_class.__name__}.pretrain_defaults: unknown fields {unknown}; "
                     f"valid fields: {', '.join(fields)}.")
  values = {**FALLBACKS, **declared}
  if values["mixture"] is None:
    values["mixture"] = (1.0,) * len(env_class().strategy_names)
  return {k: tuple(v) if k in ("mixture", "preference_mixture") else v
          for k, v in values.items()}


# The transformer policy: these fields of polyepo.model.TransformerConfig (documented
# there), at its defaults (vocabulary, special tokens and max_len come from the env).
MODEL_FIELDS = ("width", "num_layers", "num_heads", "num_kv_heads", "mlp_ratio", "activation")

# Supervised training on demonstrations: the fields of polyepo.pretrain.PretrainConfig
# (documented there), at its defaults except the per-domain ones.


def get_config(arg=None):
  args = choices.parse_arg(arg, domain="multiplication", size="default")
  return _config(args.domain, args.size, with_domain=True)


# The fields of a pretraining config that name the domain. An RL config's base
# model (`base_model_config`) leaves them out: the RL config names the domain once.
DOMAIN_FIELDS = ("domain", "env")


def base_model_config(domain, size):
  """The pretraining config of an RL config's base model (`config.base`): every
  field of `get_config` but DOMAIN_FIELDS, at `domain`'s defaults."""
  return _config(domain, size, with_domain=False)


def _config(domain, size, with_domain):
  config = ml_collections.ConfigDict()
  if with_domain:
    config.domain = domain           # which synthetic domain (envs.make name or
                                     # package.module:Class)
    config.env = ml_collections.ConfigDict()  # shape-fixing env kwargs, e.g. digits_a=2
  config.seed = 0                    # PRNG seed of the pretraining run

  defaults = model.TransformerConfig()  # fields above
  config.model = ml_collections.ConfigDict({f: getattr(defaults, f) for f in MODEL_FIELDS})
  config.pretrain = ml_collections.ConfigDict(dataclasses.asdict(pretrain.PretrainConfig(
      **domain_defaults(domain))))  # fields above

  # Where the base model lives. Empty checkpoint: the base model shipped with
  # the code for exactly this config (results/base/<domain>/model), else a cache
  # directory keyed by a hash of everything above, pretrained into once and
  # reused by later runs.
  config.checkpoint = ""             # explicit base-model directory (overrides the rest)
  config.shipped = True              # use a shipped base model of this config (False: pretrain)
  config.cache_dir = ""              # default: $POLYEPO_CACHE or ~/.cache/polyepo

  # Base-model report on the TFDS eval splits.
  config.report = ml_collections.ConfigDict()
  config.report.splits = ("validation", "test", "ood")  # targets judged on validation
  config.report.num_problems = 256   # problems per split
  config.report.num_samples = 64     # samples per problem (pass@k for k = 1..64)
  config.report.temperature = 1.0
  # Forced-strategy accuracy: every exercise of a split where the strategy applies
  # (up to num_problems), 16 completions each: the first 64 of them, used until
  # 2026-12-07, misjudged strategies near the competence threshold
  # (docs/base-models.md).
  config.report.forced_problems = 256  # problems per strategy
  config.report.forced_samples = 16   # completions per problem

  if size == "smoke":
    config.model.width = 32
    config.model.num_layers = 1
    config.model.num_heads = 2
    config.pretrain.batch_size = 32
    config.pretrain.num_steps = 20
    config.pretrain.preference_steps = min(10, config.pretrain.preference_steps)
    config.pretrain.steps_per_chunk = 10
    config.report.num_problems = 8
    config.report.num_samples = 4
    config.report.forced_problems = 2
    config.report.forced_samples = 2
  return config
