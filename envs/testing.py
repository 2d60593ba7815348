"""`check_env`: the conformance suite a domain must pass, yours included.

  from envs import testing
  testing.check_env(MyDomain())       # AssertionError listing what failed

Each check is a function of (env, params, key) that raises AssertionError with
the failing examples rendered; `check_env` runs all of them (or `only=` some)
and reports every failure at once. What they hold an env to (see
`polyepo.env_api.Env`):

* `api`: the protocol's attributes and shapes; default and ood params are
  pytrees that `vmap`; every problem has an applicable strategy.
* `labels_recovered`: every strategy's demonstration, on every problem where it
  applies, earns reward 1 and is labelled with that strategy.
* `reward_from_problem`: a correct response scored against another problem
  earns 1 iff the two problems share the answer.
* `slips`: slipped demonstrations keep their label and earn 0.
* `random_tokens`: uniformly random responses are DEGENERATE and earn 0.
* `guessing`: the most common correct answer, given to every problem, earns at
  most `MAX_GUESS_RATE` (10%) of the reward: the answer must not be guessable
  without the work (over 512 problems drawn from `params`). It fails rather
  than warns, like every check; a domain that means its answers to be few
  (yes/no) can leave it out with `only=`.
* `truncation`: a correct response cut before its EOS earns 0, is DEGENERATE
  and has no answer.
* `answers`: correct responses to one problem share an answer id.
* `jit_vmap`: score, applicable and prompts are the same under `jit` and `vmap`.
* `render_round_trip`: `parse_problems(question_text(p))` gives p back,
  `text_to_tokens(response_text(r))` gives r up to EOS, and `render` is the two.
* `parse_errors`: a question that is no problem raises ValueError quoting it.
* `canonical_form`: (envs with `hold_out`) `canonical_form` gives each problem
  one row, its own (the same under `jit`, under `vmap` and in any batch), and
  every problem falls in exactly one split, that of its exercise.
* `symmetries`: (envs with `hold_out` that define `symmetries`) each symmetry
  occurs among the drawn problems (under `params` and the default params), and
  maps every problem it applies to onto a problem of the same exercise
  (`canonical_form`).
* `held_out`: (envs with `hold_out`) training draws (`polyepo.splits.sample`)
  never include an exercise of `validation`, `test` or `ood` in any surface
  form, `ood` shares no exercise with `test` and no problem with training;
  an env that does not name its `ood` exercises (`beyond_training`) must also
  shift `ood_params`' support away from training's.
"""

from typing import Callable, Dict, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from polyepo.env_api import DEGENERATE
from polyepo.evaluation import splits

NOT_A_PROBLEM = "Tell me a story about a dragon."
MAX_GUESS_RATE = 0.1
"""`guessing`: the most reward one fixed answer may earn over a domain's problems
(the shipped domains' most common answers earn under 2%, at default and ood
params; a GCD of uniform pairs would earn 61% with `1`)."""


def _problems_and_demos(env, params, key, num_problems, slip_rate=0.0):
  """Every strategy on every problem where it applies.

  Returns:
    (problems, strategies i32[M], responses i32[M, T]) over the M applicable
    (problem, strategy) pairs, problems repeated to match.
  """
  key_p, key_d = jax.random.split(key)
  problems = env.sample_problems(key_p, params, num_problems)
  applicable = np.asarray(env.applicable(problems))
  rows, strategies = np.nonzero(applicable)
  problems = jax.tree.map(lambda x: x[rows], problems)
  responses, ok = env.demonstrate(key_d, problems, jnp.asarray(strategies, jnp.int32),
                                  slip_rate)
  assert np.asarray(ok).all(), "demonstrate says ok=False where applicable() is True"
  return problems, strategies, np.asarray(responses)


def _examples(env, problems, responses, where, limit=3) -> str:
  index = np.flatnonzero(where)[:limit]
  take = jax.tree.map(lambda x: x[index], problems)
  return "\n    ".join(env.render(take, responses[index]))


def check_api(env, params, key, num_problems):
  s = len(env.strategy_names)
  assert s >= 1 and len(set(env.strategy_names)) == s, "strategy_names must be unique"
  assert len(env.strategy_families) == s, "one strategy family per strategy"
  assert env.pad_id != env.eos_id, "pad_id and eos_id must differ"
  for name in ("pad_id", "eos_id"):
    assert 0 <= getattr(env, name) < env.vocab_size, f"{name} outside the vocabulary"
  problems = env.sample_problems(key, params, num_problems)
  assert all(x.shape[0] == num_problems for x in jax.tree.leaves(problems)), (
      "every leaf of sample_problems must have leading axis B")
  prompts = env.prompt_tokens(problems)
  assert prompts.ndim == 2 and prompts.shape[0] == num_problems, "prompt_tokens: i32[B, P]"
  assert prompts.dtype == jnp.int32, f"prompt_tokens dtype {prompts.dtype}, want int32"
  applicable = np.asarray(env.applicable(problems))
  assert applicable.shape == (num_problems, s) and applicable.dtype == bool, (
      f"applicable must be bool[B, S], got {applicable.dtype}{list(applicable.shape)}")
  assert applicable.any(1).all(), "some problem has no applicable strategy"
  both = jax.tree.map(lambda x, y: jnp.stack([x, y]), env.default_params(), env.ood_params())
  sampled = jax.vmap(lambda k, p: env.sample_problems(k, p, 4))(jax.random.split(key), both)
  assert all(x.shape[:2] == (2, 4) for x in jax.tree.leaves(sampled)), (
      "sample_problems must vmap over params")


def check_labels_recovered(env, params, key, num_problems):
  problems, strategies, responses = _problems_and_demos(env, params, key, num_problems)
  assert responses.shape[1] == env.max_response_len, "demonstrations must be i32[B, T]"
  reward, label = (np.asarray(x) for x in env.score(problems, jnp.asarray(responses)))
  assert reward.dtype == np.float32 and label.dtype == np.int32, "score: (f32[B], i32[B])"
  bad = (reward != 1) | (label != strategies)
  assert not bad.any(), (
      f"{bad.sum()} of {len(bad)} demonstrations are not rewarded 1 with their own label, "
      f"e.g. (strategies {strategies[bad][:3]}, labels {label[bad][:3]}):\n    "
      + _examples(env, problems, responses, bad))


def check_reward_from_problem(env, params, key, num_problems):
  problems, _, responses = _problems_and_demos(env, params, key, num_problems)
  perm = np.random.default_rng(0).permutation(len(responses))
  others = jax.tree.map(lambda x: x[perm], problems)
  reward, _ = env.score(others, jnp.asarray(responses))
  own = np.asarray(env.answers(problems, jnp.asarray(responses)))
  right = np.asarray(env.answers(others, jnp.asarray(responses[perm])))
  bad = np.asarray(reward) != (own == right)
  assert not bad.any(), (
      f"{bad.sum()} responses are rewarded on another problem unless they answer it: "
      "the reward must come from the problem, not the trace:\n    "
      + _examples(env, others, responses, bad))


def check_slips(env, params, key, num_problems, max_unslipped=0.01):
  problems, strategies, responses = _problems_and_demos(env, params, key, num_problems, 1.0)
  reward, label = (np.asarray(x) for x in env.score(problems, jnp.asarray(responses)))
  relabelled = label != strategies
  assert not relabelled.any(), (
      f"{relabelled.sum()} slipped demonstrations lost their label:\n    "
      + _examples(env, problems, responses, relabelled))
  assert reward.mean() <= max_unslipped, (
      f"{reward.mean():.1%} of slipped demonstrations are still right (at most "
      f"{max_unslipped:.1%} allowed):\n    " + _examples(env, problems, responses, reward > 0))


def check_random_tokens(env, params, key, num_problems):
  problems = env.sample_problems(key, params, num_problems)
  responses = np.asarray(jax.random.randint(
      jax.random.fold_in(key, 1), (num_problems, env.max_response_len), 0, env.vocab_size))
  reward, label = (np.asarray(x) for x in env.score(problems, jnp.asarray(responses)))
  bad = (label != DEGENERATE) | (reward != 0)
  assert not bad.any(), (
      f"{bad.sum()} random responses are labelled or rewarded:\n    "
      + _examples(env, problems, responses, bad))


def check_guessing(env, params, key, num_problems, num_draws=512,
                   max_guess_rate=MAX_GUESS_RATE):
  """The most common correct answer, given to every problem, earns <= max_guess_rate.

  Draws `num_draws` problems (more than the other checks: the estimate is a
  share), demonstrates one applicable strategy on each, takes the answer id
  (`env.answers`) the most problems share, and scores one response with that
  answer against every problem: the reward a policy earns by answering the same
  thing without the work. `num_problems` is not used.
  """
  del num_problems
  key_p, key_d = jax.random.split(jax.random.fold_in(key, 3))
  problems = env.sample_problems(key_p, params, num_draws)
  first = np.argmax(np.asarray(env.applicable(problems)), axis=1).astype(np.int32)
  responses, _ = env.demonstrate(key_d, problems, jnp.asarray(first))
  responses = np.asarray(responses)
  ids = np.asarray(env.answers(problems, jnp.asarray(responses)))
  values, counts = np.unique(ids[ids >= 0], return_counts=True)
  assert len(values), "no demonstration has an answer id"
  modal = ids == values[np.argmax(counts)]
  guess = np.repeat(responses[np.flatnonzero(modal)[:1]], num_draws, axis=0)
  reward, _ = env.score(problems, jnp.asarray(guess))
  rate = float(np.mean(np.asarray(reward)))
  assert rate <= max_guess_rate, (
      f"one answer alone earns {rate:.1%} of the reward on {num_draws} problems (at most "
      f"{max_guess_rate:.0%} allowed): a policy could skip the work. Draw problems so that "
      "no answer is that common. A problem with that answer:\n    "
      + _examples(env, problems, responses, modal, limit=1))


def check_truncation(env, params, key, num_problems):
  problems, _, responses = _problems_and_demos(env, params, key, num_problems)
  eos = np.argmax(responses == env.eos_id, axis=1)
  cut = (np.random.default_rng(1).random(len(eos)) * (eos + 1)).astype(int)  # in [0, eos]
  cut_responses = np.where(np.arange(responses.shape[1]) >= cut[:, None], env.pad_id, responses)
  reward, label = env.score(problems, jnp.asarray(cut_responses))
  answers = np.asarray(env.answers(problems, jnp.asarray(cut_responses)))
  bad = (np.asarray(reward) != 0) | (np.asarray(label) != DEGENERATE) | (answers != -1)
  assert not bad.any(), (
      f"{bad.sum()} responses cut before EOS earn a reward, keep a label or give an "
      "answer:\n    "
      + _examples(env, problems, cut_responses, bad))


def check_answers(env, params, key, num_problems):
  problems, _, responses = _problems_and_demos(env, params, key, num_problems)
  ids = np.asarray(env.answers(problems, jnp.asarray(responses)))
  assert ids.dtype == np.int32 and ids.shape == (len(responses),), "answers: i32[B]"
  leaves = [np.asarray(x).reshape(len(ids), -1) for x in jax.tree.leaves(problems)]
  by_problem: Dict[tuple, set] = {}
  for i, answer in enumerate(ids.tolist()):
    problem = tuple(np.concatenate([x[i] for x in leaves]).tolist())
    by_problem.setdefault(problem, set()).add(answer)
  split = [v for v in by_problem.values() if len(v) > 1 or -1 in v]
  assert not split, f"correct responses to one problem give answer ids {split[:3]}"


def check_jit_vmap(env, params, key, num_problems):
  problems, _, responses = _problems_and_demos(env, params, key, num_problems)
  m = (len(responses) // 2) * 2
  problems = jax.tree.map(lambda x: x[:m], problems)
  responses = jnp.asarray(responses[:m])
  eager = env.score(problems, responses)
  jitted = jax.jit(env.score)(problems, responses)
  halves = jax.tree.map(lambda x: x.reshape((2, m // 2) + x.shape[1:]), (problems, responses))
  mapped = jax.vmap(env.score)(*halves)
  for name, other in (("jit", jitted), ("vmap", mapped)):
    for a, b in zip(eager, other):
      np.testing.assert_array_equal(np.asarray(a).ravel(), np.asarray(b).ravel(),
                                    err_msg=f"score differs under {name}")
  for fn in (env.applicable, env.prompt_tokens):
    np.testing.assert_array_equal(
        np.asarray(fn(problems)), np.asarray(jax.vmap(fn)(halves[0])).reshape(
            np.shape(fn(problems))), err_msg=f"{fn.__name__} differs under vmap")


def check_render_round_trip(env, params, key, num_problems):
  problems, _, responses = _problems_and_demos(env, params, key, num_problems)
  questions = env.question_text(problems)
  parsed = env.parse_problems(questions)
  for a, b in zip(jax.tree.leaves(problems), jax.tree.leaves(parsed)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b),
                                  err_msg="parse_problems(question_text(p)) is not p")
  texts = env.response_text(responses)
  rendered = env.render(problems, responses)
  for q, t, r, tokens in zip(questions, texts, rendered, responses):
    assert r.startswith(q) and r.endswith(t), f"render {r!r} is not question + response"
    back = np.asarray(env.text_to_tokens(t))
    eos = int(np.argmax(tokens == env.eos_id))
    np.testing.assert_array_equal(back, tokens[:eos],
                                  err_msg=f"text_to_tokens({t!r}) is not the response")


def check_parse_errors(env, params, key, num_problems):
  del params, key, num_problems
  try:
    env.parse_problems([NOT_A_PROBLEM])
  except ValueError as err:
    assert NOT_A_PROBLEM in str(err), f"the ValueError does not quote the input: {err}"
  else:
    raise AssertionError(f"parse_problems accepted {NOT_A_PROBLEM!r}")


def _rows(tree) -> np.ndarray:
  """i64[B, W]: each row's numbers, every leaf of a pytree with leading axis B."""
  leaves = [np.asarray(x).reshape(np.shape(x)[0], -1) for x in jax.tree.leaves(tree)]
  return np.concatenate(leaves, axis=1).astype(np.int64)


def _problem_rows(problems) -> set:
  return set(map(tuple, _rows(problems).tolist()))


def _split_of(env, problems) -> np.ndarray:
  """i32[B]: the index in `splits.SPLITS` of each problem's split; AssertionError
  if a problem is in none or in several."""
  member = np.stack([np.asarray(splits.in_split(env, problems, s)) for s in splits.SPLITS], 1)
  count = member.sum(1)
  assert (count == 1).all(), (
      f"{(count != 1).sum()} problems are in {sorted(set(count[count != 1].tolist()))} splits, "
      "not exactly one")
  return np.argmax(member, 1)


def check_canonical_form(env, params, key, num_problems, num_draws=512):
  """One row per problem, its own (jit, vmap, any batch), and one split per
  exercise. Draws `num_draws` problems (more than the other checks, to find
  problems of one exercise in different surface forms: b * a beside a * b);
  `num_problems` is not used."""
  del num_problems
  if not env.hold_out:
    return
  problems = env.sample_problems(jax.random.fold_in(key, 4), params, num_draws)
  forms = env.canonical_form(problems)
  assert all(np.shape(x)[0] == num_draws for x in jax.tree.leaves(forms)), (
      "every leaf of canonical_form must have leading axis B")
  rows = _rows(forms)
  np.testing.assert_array_equal(_rows(jax.jit(env.canonical_form)(problems)), rows,
                                err_msg="canonical_form differs under jit")
  even = num_draws // 2 * 2
  halves = jax.tree.map(lambda x: x[:even].reshape((2, -1) + x.shape[1:]), problems)
  mapped = jax.tree.map(lambda x: x.reshape((even,) + x.shape[2:]),
                        jax.vmap(env.canonical_form)(halves))
  np.testing.assert_array_equal(_rows(mapped), rows[:even],
                                err_msg="canonical_form differs under vmap: a row's form "
                                        "must not depend on the other rows")
  reverse = jax.tree.map(lambda x: x[::-1], problems)
  np.testing.assert_array_equal(_rows(env.canonical_form(reverse))[::-1], rows,
                                err_msg="canonical_form differs in another batch order")
  split = _split_of(env, problems)
  exercise = np.unique(rows, axis=0, return_inverse=True)[1].reshape(-1)
  first = np.full(exercise.max() + 1, -1)
  first[exercise[::-1]] = split[::-1]  # the split of each exercise's first problem
  apart = split != first[exercise]
  assert not apart.any(), f"{apart.sum()} problems are in another split than their exercise"


def check_symmetries(env, params, key, num_problems, num_draws=512):
  """Each symmetry (`env.symmetries`) keeps the exercise wherever it applies, and
  applies to some problem among `num_draws` drawn under `params` and as many
  under the default params (else it is never checked). The default draws are
  there because a symmetry may leave a shifted space: under multiplication's ood
  params both factors are at least 50, so no halve-and-double stays a 2-digit
  pair."""
  del num_problems
  if not env.hold_out or not callable(getattr(env, "symmetries", None)):
    return
  draws = [env.sample_problems(jax.random.fold_in(key, 5 + i), p, num_draws)
           for i, p in enumerate((params, env.default_params()))]
  problems = jax.tree.map(lambda *x: jnp.concatenate(x), *draws)
  num_draws = 2 * num_draws
  rows = splits.form_rows(env, problems)
  for name, (moved, applies) in env.symmetries(problems).items():
    applies = np.asarray(applies)
    assert applies.shape == (num_draws,), f"symmetry {name!r}: its mask must be bool[B]"
    assert applies.any(), f"symmetry {name!r} applies to none of {num_draws} problems"
    assert np.asarray(env.applicable(moved))[applies].any(1).all(), (
        f"symmetry {name!r} makes problems no strategy applies to")
    moved_rows = splits.form_rows(env, moved)
    other = np.any(moved_rows != rows, axis=1) & applies
    assert not other.any(), (
        f"symmetry {name!r} moves {other.sum()} of {applies.sum()} problems to another "
        f"exercise (forms {rows[other][:2].tolist()} -> {moved_rows[other][:2].tolist()})")


def check_held_out(env, params, key, num_problems, num_draws=4096):
  del params, num_problems  # the splits are defined on the default and ood params
  if not env.hold_out:
    return
  default = env.default_params()
  train_problems = splits.sample(env, key, default, num_draws, "train")
  assert np.asarray(splits.in_split(env, train_problems, "train")).all(), (
      "a train draw is outside train")
  train = _problem_rows(env.canonical_form(train_problems))
  held = {}
  for split in ("validation", "test", "ood"):
    params = env.ood_params() if split == "ood" else default
    drawn = splits.sample(env, jax.random.fold_in(key, 1), params, num_draws // 8, split)
    assert np.asarray(splits.in_split(env, drawn, split)).all(), f"a {split} draw is outside {split}"
    held[split] = drawn
    leaked = train & _problem_rows(env.canonical_form(drawn))
    assert not leaked, (f"{len(leaked)} {split} exercises drawn for training (canonical forms "
                        f"{sorted(leaked)[:3]})")
  shared = (_problem_rows(env.canonical_form(held["ood"]))
            & _problem_rows(env.canonical_form(held["test"])))
  assert not shared, f"{len(shared)} ood exercises are test exercises, e.g. {sorted(shared)[:3]}"
  ood = _problem_rows(held["ood"])
  if not splits.owns_ood(env):  # then ood_params alone must leave training's support
    ood |= _problem_rows(env.sample_problems(jax.random.fold_in(key, 2), env.ood_params(),
                                             num_draws))
  both = _problem_rows(train_problems) & ood
  assert not both, (f"{len(both)} ood problems are training problems, e.g. {sorted(both)[:3]}: "
                    "ood_params must shift the support away from default_params'")


CHECKS: Dict[str, Callable] = {
    "api": check_api,
    "labels_recovered": check_labels_recovered,
    "reward_from_problem": check_reward_from_problem,
    "slips": check_slips,
    "random_tokens": check_random_tokens,
    "guessing": check_guessing,
    "truncation": check_truncation,
    "answers": check_answers,
    "jit_vmap": check_jit_vmap,
    "render_round_trip": check_render_round_trip,
    "parse_errors": check_parse_errors,
    "canonical_form": check_canonical_form,
    "symmetries": check_symmetries,
    "held_out": check_held_out,
}


def check_env(env, params=None, *, num_problems: int = 64, seed: int = 0,
              only: Optional[Sequence[str]] = None) -> None:
  """Runs the conformance checks on `env` under `params` (default: its defaults).

  Args:
    env: an object satisfying `polyepo.env_api.Env`.
    params: the env params to sample problems with.
    num_problems: problems per check (each strategy is demonstrated on each
      problem where it applies).
    seed: PRNG seed of the problems and demonstrations.
    only: names of the checks to run (see `CHECKS`); all by default.

  Raises:
    ValueError: naming an unknown check.
    AssertionError: listing every failed check with its examples (an error
      raised inside a check counts as its failure).
  """
  names = list(CHECKS) if only is None else list(only)
  unknown = [n for n in names if n not in CHECKS]
  if unknown:
    raise ValueError(f"Unknown checks {unknown}; valid choices: {', '.join(CHECKS)}.")
  params = env.default_params() if params is None else params
  key = jax.random.key(seed)  # one key: the checks share shapes, so compilations
  failures = []
  for name in names:
    try:
      CHECKS[name](env, params, key, num_problems)
    except Exception as err:  # pylint: disable=broad-except
      kind = "" if isinstance(err, AssertionError) else f"{type(err).__name__}: "
      failures.append(f"{name}: {kind}{err}")
  if failures:
    raise AssertionError(f"{type(env).__name__} fails {len(failures)} of {len(names)} "
                         "conformance checks:\n" + "\n".join(failures))
