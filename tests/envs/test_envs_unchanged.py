"""The environments behave as before the kit: a regression pin, not a correctness test.

`tests/pins/envs_before_kit.npz` holds what the implementation the kit replaced wrote
(one module per domain, no longer in the tree, so the file is not regenerated: it is
what the kit is held to): for each domain and split,
128 problems drawn with fixed keys, their prompts and applicability, every
strategy demonstrated on every problem with and without slips (fixed keys), and
the reward, label and answer id of those demonstrations and of as many
model-like corruptions of them (tokens substituted, a digit changed, cut short,
a token deleted or inserted, spliced with another response, random tokens).
The kit must reproduce all of it exactly on those problems (read back from the
file: the training and ood distributions have since changed on purpose, see
`polyepo.splits`; polynomial roots is built with the static bounds it had then,
max_root=6 and max_lead=3, so that its prompts, search lists and traces keep
their width). Correctness itself is tested
against independent brute force in the per-domain tests and
`envs.testing.check_env`.
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
import repo

GOLDEN = np.load(os.path.join(repo.PINS, "envs_before_kit.npz"))
NUM_PROBLEMS = 128
STATIC_THEN = {"multiplication": {}, "polynomial_roots": {"max_root": 6, "max_lead": 3}}


@pytest.mark.slow
@pytest.mark.parametrize("split", ["test", "ood"])
@pytest.mark.parametrize("name", envs.NAMES)
def test_same_problems_traces_rewards_and_labels(name, split):
  env, params = envs.make(name, **STATIC_THEN[name])
  prefix = f"{name}/{split}/"
  seed = {"test": 0, "ood": 1}[split]
  like = jax.tree.leaves(env.sample_problems(jax.random.key(0), params, 1))
  problems = jax.tree.unflatten(jax.tree.structure(env.sample_problems(
      jax.random.key(0), params, 1)), [jnp.asarray(GOLDEN[prefix + f"problem{j}"], x.dtype)
                                       for j, x in enumerate(like)])
  np.testing.assert_array_equal(env.prompt_tokens(problems), GOLDEN[prefix + "prompts"])
  np.testing.assert_array_equal(env.applicable(problems), GOLDEN[prefix + "applicable"])
  s = len(env.strategy_names)
  rep = jax.tree.map(lambda x: jnp.repeat(x, s, 0), problems)
  strategies = jnp.tile(jnp.arange(s), NUM_PROBLEMS)
  for slip in (0.0, 0.5):
    tokens, ok = env.demonstrate(jax.random.key(10 + seed), rep, strategies, slip)
    np.testing.assert_array_equal(ok, GOLDEN[prefix + f"demo_ok{slip}"])
    np.testing.assert_array_equal(tokens, GOLDEN[prefix + f"demo{slip}"])
  responses = jnp.asarray(GOLDEN[prefix + "responses"], jnp.int32)
  everything = jax.tree.map(lambda x: jnp.concatenate([x] * 4), rep)
  reward, label = env.score(everything, responses)
  np.testing.assert_array_equal(reward, GOLDEN[prefix + "reward"])
  np.testing.assert_array_equal(label, GOLDEN[prefix + "label"])
  np.testing.assert_array_equal(env.answers(everything, responses), GOLDEN[prefix + "answers"])
