r"""Shared base of the RL configs (grpo.py, reward_shaping.py, poly_epo.py, pass_at_k.py,
ppo.py, poly_ppo.py).

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
Any field can be overridden: --config.train.learning_rate=3e-5.

Defaults are written once, in the dataclasses the fields unpack into
(polyepo.train.TrainConfig, polyepo.loop.RunSettings); this file lists and
comments every field, and sets what an algorithm or a size changes.
"""

import dataclasses

import ml_collections

from configs import choices
from configs import pretrain as pretrain_config
from polyepo import loop, train

# config.train: the fields of polyepo.train.TrainConfig, at its defaults except
# the algorithm's (estimator, ...) and the size presets below:
#   estimator          grpo | reward_shaping | set_rl | ppo | poly_ppo
#   normalize          grpo: divide by the reward std (False = Dr. GRPO);
#                      set_rl: standardise each prompt's advantages;
#                      ppo / poly_ppo: standardise each set's advantages and
#                      the step's GAE advantages
#   normalize_over     prompt | batch: grpo / reward_shaping / set_rl with
#                      normalize: standardise each prompt's group, or all
#                      B * N advantages of the step together
#   lam                reward shaping: weight of the diversity bonus
#   objective          set_rl / poly_ppo objective: polychromic |
#                      polychromic_correct_only | pass_at_n | mean_reward | srl
#   set_size           set_rl / poly_ppo: n, the set size (1 <= n < N, n < vine_samples)
#   num_subsets        set_rl / poly_ppo: 0 = exact over all C(N, n) sets, else K
#                      sampled (per set)
#   prompts_per_step   B: prompts per step
#   samples_per_prompt N: rollouts per prompt
#   temperature        rollout temperature
#   num_epochs         μ: passes over each step's rollouts
#   num_minibatches    minibatches per pass (each holds whole groups; divides B)
#   microbatch_rows    responses per micro-batch of the update (gradient
#                      accumulated over whole groups; the minibatch's responses
#                      or more: all at once); 0: by platform, 16 on a CPU, the
#                      whole minibatch on an accelerator
#   learning_rate      AdamW learning rate (after warm-up)
#   warmup_steps       linear warm-up steps
#   weight_decay       AdamW weight decay
#   grad_clip          global-norm gradient clipping
#   eps_low            PPO clip below (ratio >= 1 - eps_low)
#   eps_high           PPO clip above (ratio <= 1 + eps_high)
#   aggregation        token_mean | sequence_mean | sequence_sum
#   kl_coef            β: weight of the k3 KL to the base model
#   num_steps          RL steps
#   steps_per_chunk    steps per compiled chunk (host logs between chunks)
#   gamma              ppo / poly_ppo: GAE discount γ in [0, 1]
#   gae_lambda         ppo / poly_ppo: GAE λ in [0, 1]
#   value_learning_rate  ppo / poly_ppo: Adam learning rate of the value head (> 0)
#   value_clip         ppo / poly_ppo: ε of the clipped value loss (0: unclipped)
#   num_vine_states    poly_ppo: K >= 0 rollout states per prompt besides the
#                      prompt, drawn at step boundaries of the N rollouts
#   vine_samples       poly_ppo: N_v > set_size continuations from each state
#   vine_window        poly_ppo: W >= 1 reasoning steps a state's set advantage
#                      covers (GAE after it)
#   vine_selection     poly_ppo: uniform | early (boundary k+1 of a response
#                      weighted 2^-(k-1)): how rollout states are drawn
#
# config.run: the fields of polyepo.loop.RunSettings, at its defaults except the
# size presets below:
#   num_seeds          seeds trained together in one program
#   seed_batch_size    seeds computed at once: k runs batches of k (vmapped);
#                      0 = by platform: all on an accelerator, one at a time on
#                      a CPU (whose cores one seed already keeps busy; see
#                      polyepo.train.default_seed_batch_size)
#   seed               base seed
#   eval_every         evaluate on the validation/test/ood splits every k steps
#                      (0: start/end)
#   checkpoint_every   orbax checkpoint every k steps (and at the end)
#   eval_at_start      evaluate the base model at step 0 (identical in every run
#                      of a sweep that shares base model and eval settings)
#   eval_splits        the eval splits evaluated: validation, test, ood (tuning
#                      runs: validation only)
#   eval_num_problems  problems per eval split
#   eval_num_samples   samples per problem (pass@k up to k = this)
#   eval_temperature   sampling temperature at evaluation
#   eval_forced_problems  forced-strategy accuracy: problems per strategy (0: off)
#   eval_forced_samples   ... completions per problem
#   num_devices        devices of the `data` mesh axis (0 = all)
#   max_checkpoints    orbax checkpoints kept


def get_config(arg=None, **algorithm):
  """The shared config; `algorithm` sets config.train fields (estimator, ...)."""
  args = choices.parse_arg(arg, domain="multiplication", size="default")
  config = ml_collections.ConfigDict()
  config.name = algorithm.pop("name")       # run name (used in the default workdir)
  config.domain = args.domain               # synthetic domain (envs.make name or
                                            # package.module:Class)
  config.size = args.size                   # smoke | default | paper
  config.env = ml_collections.ConfigDict()  # shape-fixing env kwargs
  # The base model the policy starts from (pretrained or restored from the cache).
  base_size = "smoke" if args.size == "smoke" else "default"
  config.base = pretrain_config.get_config(f"domain={args.domain},size={base_size}")
  # Operands of the policy's projection matmuls in rollouts, updates and evals:
  # float32 | bfloat16 (bfloat16 operands, float32 accumulation and parameters;
  # faster on CPUs with AMX, see polyepo.model.TransformerConfig).
  config.matmul_dtype = "float32"

  config.train = ml_collections.ConfigDict(
      dataclasses.asdict(train.TrainConfig(**algorithm)))  # fields above
  config.run = ml_collections.ConfigDict(dataclasses.asdict(loop.RunSettings()))  # fields above

  t, r = config.train, config.run
  if args.size == "smoke":
    t.prompts_per_step = 4
    t.samples_per_prompt = 4
    t.set_size = 2
    t.num_vine_states = 1
    t.vine_samples = 3
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
    t.set_size = 8
    t.vine_samples = 16
    t.prompts_per_step = 8
    t.num_minibatches = 4
    t.num_steps = 300
    r.num_seeds = 3
  return config
