r"""Shared base of the RL configs (grpo.py, reward_shaping.py, poly_epo.py, pass_at_k.py,
ppo.py, poly_ppo.py, poly_epo_windowed.py, poly_epo_official.py, dr_grpo.py).

The config string picks the domain (a registered name, or the env class of a
domain defined outside envs/ as package.module:Class) and the size:
  --config=configs/poly_epo.py:domain=polynomial_roots,size=smoke
  --config=configs/grpo.py:domain=addition_env:Addition,size=smoke  (tests/ on PYTHONPATH)
  size=smoke    the whole flow at the smallest sizes, mostly compiling; used by
                the tests
  size=default  the main job (the shipped base model restored, or pretrained
                first where none matches; run times: README.md,
                docs/performance.md, docs/base-models.md)
  size=paper    N=32 samples, sets of n=8, longer training
Any field can be overridden: --config.train.learning_rate=3e-5,
--config.algorithm.set_size=8, --config.algorithm.critic.model=trunk.

Defaults and field documentation are written once, where the fields are read:
config.train and config.run in the dataclasses they unpack into
(polyepo.rl.train.TrainConfig, polyepo.rl.plan.RunSettings), config.algorithm
in its factory's signature and docstring (polyepo.rl.algorithms, with its
parts in polyepo.rl.parts); this file sets what an algorithm or a size changes.
"""

import dataclasses

import ml_collections

from configs import choices
from configs import pretrain as pretrain_config
from polyepo.rl import algorithms, plan, train

# config.train holds the fields of polyepo.rl.train.TrainConfig and config.run those
# of polyepo.rl.plan.RunSettings, each documented in its dataclass's docstring, at
# their defaults but for the size presets below. config.algorithm is the
# algorithm's name and its factory's keywords (polyepo.rl.algorithms.spec).


def get_config(arg=None, *, name: str, algorithm: str, **hyperparameters):
  """The shared config of a run called `name` training `algorithm` (a
  polyepo.rl.algorithms name) with `hyperparameters` besides its defaults."""
  args = choices.parse_arg(arg, domain="multiplication", size="default")
  config = ml_collections.ConfigDict()
  config.name = name                        # run name (used in the default workdir)
  config.domain = args.domain               # synthetic domain (envs.make name or
                                            # package.module:Class)
  config.size = args.size                   # smoke | default | paper
  config.env = ml_collections.ConfigDict()  # shape-fixing env kwargs
  # The base model the policy starts from (pretrained or restored from the cache):
  # configs/pretrain.py's fields but `domain` and `env`, which are the ones above
  # (`experiments.build.base_config`). Its per-domain defaults are the config
  # string's domain's, which is why the domain is chosen there: the entry points
  # read --config.domain=X as the config string's domain=X (experiments.cli).
  base_size = "smoke" if args.size == "smoke" else "default"
  config.base = pretrain_config.base_model_config(args.domain, base_size)
  # Operands of the policy's projection matmuls in rollouts, updates and evals:
  # float32 | bfloat16 (bfloat16 operands, float32 accumulation and parameters;
  # faster on CPUs with AMX, see polyepo.model.TransformerConfig).
  config.matmul_dtype = "float32"
  # What one run asks of a Ray cluster under `experiments.sweep --launcher=ray`
  # (docs/ray.md): CPU cores, and GPUs where the cluster has any (1: one run per
  # GPU, 0.5: two; a cluster without GPUs runs it on CPUs). The local launcher and
  # `experiments.synthetic` ignore it.
  config.resources = ml_collections.ConfigDict(dict(num_cpus=1.0, num_gpus=1.0))

  config.algorithm = ml_collections.ConfigDict(algorithms.spec(algorithm, **hyperparameters))
  config.train = ml_collections.ConfigDict(dataclasses.asdict(train.TrainConfig()))
  config.run = ml_collections.ConfigDict(dataclasses.asdict(plan.RunSettings()))

  a, t, r = config.algorithm, config.train, config.run
  if args.size == "smoke":
    t.prompts_per_step = 4
    t.samples_per_prompt = 4
    set_everywhere(a, set_size=2)
    set_everywhere(a.get("vines", {}), num_states=1, samples=3)
    t.num_minibatches = 1
    t.num_steps = 4
    t.steps_per_chunk = 2
    r.eval_every = 0
    r.checkpoint_every = 2
    r.eval_num_problems = 4
    r.eval_num_samples = 4
    r.eval_forced_problems = 1
    r.eval_forced_samples = 2
  elif args.size == "paper":
    t.samples_per_prompt = 32
    set_everywhere(a, set_size=8)
    set_everywhere(a.get("vines", {}), samples=16)
    t.prompts_per_step = 8
    t.num_minibatches = 4
    t.num_steps = 300
    r.num_seeds = 3
  return config


def set_everywhere(fields, **values) -> None:
  """Sets each of `values` where `fields` (a ConfigDict) or a nested algorithm of it
  (windowed's `first` and `rest`) has that field: a size preset's set size is
  the set size of whichever part has one."""
  for key, value in values.items():
    if key in fields:
      fields[key] = value
  for nested in fields.values():
    if isinstance(nested, ml_collections.ConfigDict) and "name" in nested:
      set_everywhere(nested, **values)
