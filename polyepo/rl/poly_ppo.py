"""Token advantages of Poly-PPO and of PPO with a critic.

Poly-PPO is Algorithm 2 of Ibn Hamid et al., *Set Reinforcement Learning: Principles and
Approaches* (the set RL note), §6.1; the sections, lines and definitions cited below are
that note's.

One prompt's group holds M = N + K·N_v responses, roots first:

  rows 0 .. N-1                  the N root responses (state s_0 = the prompt)
  rows N + k·N_v .. + N_v - 1    the N_v vines of rollout state k (`polyepo.vines`)

**Rollout states** (Algorithm 2, line 6). Each set of responses that share a
state s forms the sets of n at s: the N roots at the prompt (case 1 of §6.1),
the N_v vines at each chosen state (case 2). Each member gets the marginal set
advantage over the sets of n of its own group, exact over all subsets where a
closed form exists (`polyepo.advantages.set_rl_advantage`, the same estimator
as Poly-EPO):

  Â(s, y_i) = mean_{G ∋ i} f(s, G) - mean_G f(s, G),

and this one number is the advantage of every token of y_i from s up to
s_{+W}, W steps later (`vines.window_mask`, Algorithm 2's window T, counted in
reasoning steps). Its expectation given y_i is (N_s - n)/N_s times the marginal
set advantage of Def. 3.2 for the continuation distribution π(· | s), N_s the
set's size (tests/rl/test_poly_ppo.py computes both exactly on a decision tree).

**Everywhere else** (line 8): GAE(γ, λ) from the critic (`polyepo.gae`,
`polyepo.value_head`) on the same response.

**How windows combine.** Every token belongs to exactly one response and every
response to exactly one rollout state, the one it was sampled from (roots: the
prompt; vines: their state), so a token's advantage is its own state's set
advantage inside that state's window and GAE after it; windows never compete
for a token. A root whose window covers a chosen state s_t keeps the root set's
advantage on its tokens after t: those tokens were sampled from the prompt and
are judged as members of the root set, while the state's vines carry the set
signal at s_t. A vine's prefix (the root's tokens before t) is context only.

**PPO** is the same with no vines and no set objective: GAE on every token,
the standard-RL baseline the set RL note contrasts with.

**Scale.** With `normalize`, each set's advantages are standardised (as
Poly-EPO standardises each prompt's) and the GAE advantages are standardised
over all GAE tokens of the step (PPO's batch normalisation), so both kinds are
of unit scale. Without it both are raw; with f = mean reward a rollout state's
advantage is then c·(r_i - V̂_MC(s)), c = (N_s - n)/(n(N_s - 1)) and V̂_MC(s) the
mean return of the state's N_s responses: VinePPO's Monte Carlo value
difference, scaled.
"""

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp

from polyepo import checks
from polyepo.core import advantages as adv_lib
from polyepo.core import gae as gae_lib
from polyepo.rl import vines as vines_lib


class GroupAdvantages(NamedTuple):
  """One group's advantages before the step-level normalisation of GAE.

  Attributes:
    set_advantage: f32[M], each response's marginal set advantage at its
      rollout state (0 for PPO).
    window: bool[M, T], the tokens the set advantage applies to.
    gae: f32[M, T], GAE advantages of every trained token.
    returns: f32[M, T], the critic's targets.
  """
  set_advantage: jax.Array
  window: jax.Array
  gae: jax.Array
  returns: jax.Array


def set_advantages(rewards: jax.Array, labels: jax.Array, *, num_roots: int,
                   vine_samples: int, objective: str, set_size: int,
                   num_subsets: Optional[int], key: jax.Array,
                   normalize: bool) -> jax.Array:
  """Marginal set advantage of each response over its own state's sets of n.

  Args:
    rewards: f32[M]; labels: i32[M], M = N + K·N_v in the module's layout.
    num_roots: N; vine_samples: N_v (static).
    objective, set_size, num_subsets: as for `advantages.set_rl_advantage`
      (num_subsets None: exact over all subsets).
    key: PRNG key (used for sampled subsets).
    normalize: standardise each set's advantages.

  Returns:
    f32[M].
  """
  checks.per_generation(rewards, labels)
  num_vines = rewards.shape[0] - num_roots
  if vine_samples <= 0 or num_vines % vine_samples:
    raise ValueError(f"M - N = {num_vines} vines must be K x vine_samples={vine_samples}.")
  num_states = num_vines // vine_samples

  def one_set(r, l, k):
    a = adv_lib.set_rl_advantage(objective, r, l, set_size=set_size, num_subsets=num_subsets,
                                 key=k)
    return adv_lib.normalize_advantage(a) if normalize else a

  keys = jax.random.split(key, num_states + 1)
  roots = one_set(rewards[:num_roots], labels[:num_roots], keys[0])
  if not num_states:
    return roots
  vines = jax.vmap(one_set)(rewards[num_roots:].reshape(num_states, vine_samples),
                            labels[num_roots:].reshape(num_states, vine_samples), keys[1:])
  return jnp.concatenate([roots, vines.reshape(-1)])


def group_advantages(rewards: jax.Array, labels: jax.Array, values: jax.Array,
                     mask: jax.Array, boundaries: jax.Array, start: jax.Array, key: jax.Array,
                     *, num_roots: int, vine_samples: int, objective: Optional[str],
                     set_size: int, num_subsets: Optional[int], window: int, gamma: float,
                     lam: float, normalize: bool) -> GroupAdvantages:
  """Poly-PPO's (objective given) or PPO's (objective None) advantages of one group.

  Args:
    rewards: f32[M] rewards of the responses.
    labels: i32[M] strategy labels.
    values: f32[M, T] the critic's V(s_t) before each token.
    mask: bool[M, T] trained tokens (a vine's continuation only).
    boundaries: bool[M, T] step boundaries of each (full) response.
    start: i32[M] each response's rollout state (0 for roots).
    key: PRNG key.
    num_roots, vine_samples, objective, set_size, num_subsets, normalize: see
      `set_advantages`; objective None gives PPO (no sets, no windows).
    window: W >= 1, steps each set advantage covers.
    gamma, lam: GAE's γ and λ.

  Returns:
    GroupAdvantages.
  """
  checks.rank("values", values, 2)
  checks.same_shape("values", values, "mask", mask)
  checks.same_shape("values", values, "boundaries", boundaries)
  per_token = jax.vmap(gae_lib.terminal_rewards)(rewards.astype(jnp.float32), mask)
  gae, returns = jax.vmap(lambda r, v, m: gae_lib.gae(r, v, m, gamma, lam))(
      per_token, values, mask)
  if objective is None:
    return GroupAdvantages(jnp.zeros_like(rewards, jnp.float32), jnp.zeros_like(mask), gae,
                           returns)
  sets = set_advantages(rewards, labels, num_roots=num_roots, vine_samples=vine_samples,
                        objective=objective, set_size=set_size, num_subsets=num_subsets,
                        key=key, normalize=normalize)
  in_window = jax.vmap(lambda b, s, m: vines_lib.window_mask(b, s, window, m))(
      boundaries, start, mask)
  return GroupAdvantages(sets, in_window, gae, returns)


def token_advantages(groups: GroupAdvantages, mask: jax.Array, normalize: bool,
                     eps: float = 1e-6) -> jax.Array:
  """Each trained token's advantage: its set advantage inside a window, else GAE.

  Args:
    groups: GroupAdvantages with a leading batch axis, [B, M] / [B, M, T].
    mask: bool[B, M, T] trained tokens.
    normalize: standardise the GAE advantages over all GAE tokens of the batch.

  Returns:
    f32[B, M, T], 0 off the mask.
  """
  checks.same_shape("gae", groups.gae, "mask", mask)
  other = mask & ~groups.window
  gae = groups.gae
  if normalize:
    m = other.astype(jnp.float32)
    count = jnp.maximum(jnp.sum(m), 1.0)
    mean = jnp.sum(gae * m) / count
    std = jnp.sqrt(jnp.sum(jnp.square(gae - mean) * m) / count)
    gae = (gae - mean) / (std + eps)
  out = jnp.where(groups.window, groups.set_advantage[..., None], gae)
  return jnp.where(mask, out, 0.0)
