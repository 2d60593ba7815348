r"""Shared base of the RL configs (grpo.py, reward_shaping.py, poly_epo.py, pass_at_k.py).

The config string picks the domain and the size:
  --config=configs/poly_epo.py:domain=polynomial_roots,size=smoke
  size=smoke    seconds; used by the tests
  size=default  the main job: about 15 minutes on a 2-core CPU, base model included
  size=paper    N=32 samples, sets of n=8, longer training
Any field can be overridden: --config.train.learning_rate=3e-5.
"""

import ml_collections

from configs import common
from configs import pretrain as pretrain_config


def get_config(arg=None, **algorithm):
  """The shared config; `algorithm` sets config.train fields (estimator, ...)."""
  args = common.parse_arg(arg, domain="multiplication", size="default")
  config = ml_collections.ConfigDict()
  config.name = algorithm.pop("name")       # run name (used in the default workdir)
  config.domain = args.domain               # synthetic domain (envs.make name)
  config.size = args.size                   # smoke | default | paper
  config.env = ml_collections.ConfigDict()  # shape-fixing env kwargs
  # The base model the policy starts from (pretrained or restored from the cache).
  base_size = "smoke" if args.size == "smoke" else "default"
  config.base = pretrain_config.get_config(f"domain={args.domain},size={base_size}")
  # Operands of the policy's projection matmuls in rollouts, updates and evals:
  # float32 | bfloat16 (bfloat16 operands, float32 accumulation and parameters;
  # faster on CPUs with AMX, see polyepo.model.TransformerConfig).
  config.matmul_dtype = "float32"

  config.train = ml_collections.ConfigDict()
  t = config.train
  t.estimator = "grpo"          # grpo | reward_shaping | set_rl
  t.normalize = True            # grpo: divide by the reward std (False = Dr. GRPO);
                                # set_rl: standardise each prompt's advantages
  t.lam = 0.0                   # reward shaping: weight of the diversity bonus
  t.objective = "polychromic"   # set_rl objective: polychromic | polychromic_correct_only |
                                # pass_at_n | mean_reward | srl
  t.set_size = 4                # set_rl: n, the set size (1 <= n < N)
  t.num_subsets = 0             # set_rl: 0 = exact over all C(N, n) sets, else K sampled
  t.prompts_per_step = 16       # B: prompts per step
  t.samples_per_prompt = 16     # N: rollouts per prompt
  t.temperature = 1.0           # rollout temperature
  t.num_epochs = 1              # μ: passes over each step's rollouts
  t.num_minibatches = 2         # minibatches per pass
  t.learning_rate = 3e-5        # AdamW learning rate (after warm-up)
  t.warmup_steps = 5            # linear warm-up steps
  t.weight_decay = 0.0
  t.grad_clip = 1.0             # global-norm gradient clipping
  t.eps_low = 0.2               # PPO clip below (ratio >= 1 - eps_low)
  t.eps_high = 0.28             # PPO clip above (ratio <= 1 + eps_high)
  t.aggregation = "token_mean"  # token_mean | sequence_mean | sequence_sum
  t.kl_coef = 0.0               # β: weight of the k3 KL to the base model
  t.num_steps = 100             # RL steps
  t.steps_per_chunk = 10        # steps per compiled chunk (host logs between chunks)
  t.update(algorithm)

  config.run = ml_collections.ConfigDict()
  r = config.run
  r.num_seeds = 1               # seeds trained together (vmapped)
  r.seed_batch_size = 0         # seeds computed at once: 0 = all; k runs batches of k
                                # (on a 2-core CPU, 1 is 1.1-1.4x faster for large batches)
  r.seed = 0                    # base seed
  r.eval_every = 50             # evaluate on the test/ood splits every k steps (0: start/end)
  r.checkpoint_every = 50       # orbax checkpoint every k steps (and at the end)
  r.eval_num_problems = 64      # problems per eval split
  r.eval_num_samples = 32       # samples per problem (pass@k up to k = this)
  r.eval_temperature = 1.0
  r.num_devices = 0             # devices of the `data` mesh axis (0 = all)

  if args.size == "smoke":
    t.prompts_per_step = 4
    t.samples_per_prompt = 4
    t.set_size = 2
    t.num_minibatches = 1
    t.num_steps = 4
    t.steps_per_chunk = 2
    r.eval_every = 0
    r.checkpoint_every = 2
    r.eval_num_problems = 4
    r.eval_num_samples = 4
  elif args.size == "paper":
    t.samples_per_prompt = 32
    t.set_size = 8
    t.prompts_per_step = 8
    t.num_minibatches = 4
    t.num_steps = 300
    r.num_seeds = 3
  return config
