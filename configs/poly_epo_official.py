r"""Poly-EPO as its authors released it: their training recipe on our domains.

configs/poly_epo.py is this project's Poly-EPO (advantages standardised per
prompt, N = 16, token-mean loss). The release (the Poly-EPO authors' code, a verl
fork: `verl/trainer/ppo/core_algos.py`, `compute_polyepo_advantage`, run by
`qwen3_experiments/qwen3_polyepo_withdrgrpo.sh`) trains with another recipe;
this config is that recipe, each setting from the release:

  train.samples_per_prompt 8     the script's ROLLOUT_N=8 (actor_rollout_ref.rollout.n)
  algorithm.set_size 4           compute_polyepo_advantage's `n = 4` (fixed in the code)
  algorithm.num_subsets 0        every set: combinations(range(group_size), n), all
                                 C(8, 4) = 70 of them (here the exact closed form,
                                 polyepo.core.advantages.polychromic_advantage)
  algorithm.normalize False      algorithm.norm_adv_by_std_in_grpo=False; the set
                                 advantage mean_{G∋i} f(G) − mean_G f(G) is used as
                                 it is (the function never standardises it)
  train.aggregation sequence_sum actor.loss_agg_mode="seq-mean-token-sum-norm" (Dr.
                                 GRPO's: each response's token sum over a fixed
                                 length, then the mean over responses)
  train.eps_low 0.2, eps_high 0.28   actor.clip_ratio_low=0.2, clip_ratio_high=0.28
  train.grad_clip 0.3            actor.grad_clip=0.3
  train.kl_coef 0                actor.use_kl_loss=False, kl_loss_coef=0.0,
                                 algorithm.use_kl_in_reward=False
  (entropy bonus)                actor.entropy_coeff=0: no config here has one
                                 (polyepo.core.losses adds none to the loss)

One epoch per step and two minibatches (ppo_epochs=1; train_batch_size=128 over
ppo_mini_batch_size=64) and temperature 1 are the release's and already every
config's (polyepo.rl.train.TrainConfig). The learning rate is not copied: the
release's actor.optim.lr=1e-6 is for Qwen3-4B-Base, a 4B-parameter model, and
ours are about 0.6M parameters. Like every algorithm here it starts from
TrainConfig's and is tuned by the registered rule (configs/claims.py `TUNING`,
configs/sweeps/tuning.py). So are the rest of the shared optimiser and batch
(AdamW with 5 warm-up steps and no weight decay, where verl's defaults are a
constant rate and weight decay 0.01; B prompts per step), so that this config
and configs/poly_epo.py differ only in the settings above. verl's dual-clip
bound on negative advantages (actor.clip_ratio_c=3, its default) has no
counterpart in polyepo.core.losses; it only acts on a token whose probability
ratio exceeds 3, rare in one epoch on fresh rollouts.

Sizes: size=default and size=paper both train the release's N = 8, n = 4 (paper
keeps its longer training and seeds, not its N = 32, n = 8); size=smoke keeps
its preset's N = 4, n = 2 (6 sets) to stay quick, the rest of the recipe as
above. configs/dr_grpo.py is GRPO with the same shared settings
(`release_settings`).
"""

from configs import base

NAME = "poly_epo_official"
SAMPLES_PER_PROMPT = 8   # ROLLOUT_N=8
SET_SIZE = 4             # compute_polyepo_advantage's n = 4
# The release's loss and optimiser settings that differ from, or must not follow, the
# shared defaults (set here even where equal, so that the recipe stays the release's).
RELEASE_TRAIN = dict(aggregation="sequence_sum", eps_low=0.2, eps_high=0.28, grad_clip=0.3,
                     kl_coef=0.0)


def release_settings(config) -> None:
  """Sets the release's shared settings in `config` (a configs/base.py ConfigDict):
  its loss and gradient clip at every size, N = 8 but at size=smoke (whose N = 4
  keeps a set size of 2 valid)."""
  config.train.update(RELEASE_TRAIN)
  if config.size != "smoke":
    config.train.samples_per_prompt = SAMPLES_PER_PROMPT


def get_config(arg=None):
  config = base.get_config(arg, name=NAME, algorithm="set_rl", objective="polychromic",
                           num_subsets=0, normalize=False)
  release_settings(config)
  if config.size != "smoke":   # paper's n = 8 would not fit in N = 8
    config.algorithm.set_size = SET_SIZE
  return config
