"""Tests for envs.multiplication: exact rewards and labels, checked independently.

Demonstrations of every strategy on every 2 x 2 problem are scored once (module
fixture); their arithmetic is re-checked in plain Python from the rendered text.
"""

import re

import hypothesis
import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs import multiplication as mul
from envs.multiplication import env as mul_env
from polyepo.env_api import DEGENERATE

ENV, PARAMS = envs.make("multiplication")
S = len(ENV.strategy_names)
T = ENV.max_response_len


# ---------------------------------------------------------------------------
# Independent (pure Python) definitions.


def _odd_part(n):
  while n % 2 == 0:
    n //= 2
  return n


def _digit_product(n):
  return any(n == p * q for p in range(2, 10) for q in range(2, 10))


def applicable_py(a, b):
  """Which strategies apply, from the definitions in the module docstring."""
  return [
      True,
      a != b,
      True,
      max(a % 10, b % 10) >= 6,
      (a - b) % 2 == 0 and a != b,
      any(n % 2 == 0 and _odd_part(n) <= 9 for n in (a, b)),
      _digit_product(a) or _digit_product(b),
      True,
  ]


def steps_of(text):
  """(question, [steps], answer or None) of a rendered trace."""
  question, response = text.split(" ", 1)
  response = response.replace(" ", "")
  body, _, answer = response.rpartition("#")
  return question, [s for s in body.split(";") if s], answer


def wrong_equations(steps):
  """Number of `lhs=rhs` steps whose arithmetic is wrong (evaluated by Python)."""
  wrong = 0
  for step in steps:
    if "=" in step:
      lhs, rhs = step.split("=")
      assert re.fullmatch(r"[0-9+\-*]+", lhs), step
      wrong += eval(lhs) != int(rhs)  # pylint: disable=eval-used
  return wrong


def skeleton(tokens):
  """Tokens up to EOS with every digit run replaced by one marker."""
  tokens = np.asarray(tokens).tolist()
  text = "".join(mul.ITOS[t] for t in tokens[:tokens.index(ENV.eos_id) + 1])
  return re.sub(r"[0-9]+", "N", text)


def score(problems, responses, size=64):
  """ENV.score on a batch padded to `size` rows (so it compiles once per size)."""
  n = len(problems.a)
  assert n <= size
  pad = lambda x, v: np.concatenate([np.asarray(x), np.full((size - n,) + np.shape(x)[1:], v)])
  padded = mul.MultiplicationProblems(a=jnp.asarray(pad(problems.a, 10), jnp.int32),
                                      b=jnp.asarray(pad(problems.b, 10), jnp.int32))
  reward, label = ENV.score(padded, jnp.asarray(pad(responses, ENV.pad_id), jnp.int32))
  return np.asarray(reward)[:n], np.asarray(label)[:n]


BIG = 90 * 90 * S  # every problem x every strategy


# ---------------------------------------------------------------------------
# All problems x all strategies, demonstrated once.


@pytest.fixture(scope="module")
def everything():
  a, b = np.meshgrid(np.arange(10, 100), np.arange(10, 100), indexing="ij")
  a, b = a.ravel(), b.ravel()
  n = a.size
  strategies = np.repeat(np.arange(S), n)
  problems = mul.MultiplicationProblems(
      a=jnp.asarray(np.tile(a, S), jnp.int32), b=jnp.asarray(np.tile(b, S), jnp.int32))
  key_clean, key_slip = jax.random.split(jax.random.PRNGKey(0))
  clean, ok = ENV.demonstrate(key_clean, problems, jnp.asarray(strategies))
  slipped, ok_slipped = ENV.demonstrate(key_slip, problems, jnp.asarray(strategies), 1.0)
  reward, label = ENV.score(problems, clean)
  reward_s, label_s = ENV.score(problems, slipped)
  return dict(
      a=np.tile(a, S), b=np.tile(b, S), strategy=strategies, problems=problems,
      clean=np.asarray(clean), ok=np.asarray(ok), slipped=np.asarray(slipped),
      ok_slipped=np.asarray(ok_slipped), reward=np.asarray(reward),
      label=np.asarray(label), reward_s=np.asarray(reward_s), label_s=np.asarray(label_s))


def test_api_attributes():
  assert len(ENV.strategy_names) == len(set(ENV.strategy_names)) >= 6
  assert ENV.vocab_size == len(mul.ITOS)
  assert 0 <= ENV.pad_id < ENV.vocab_size and 0 <= ENV.eos_id < ENV.vocab_size
  assert ENV.max_response_len == 64
  assert len(ENV.strategy_families) == S
  assert ENV.strategy_families[:2] == ("long", "long")


def test_applicable_matches_definitions(everything):
  n = 90 * 90
  app = np.asarray(ENV.applicable(jax.tree.map(lambda x: x[:n], everything["problems"])))
  expected = np.array([applicable_py(a, b) for a, b in
                       zip(everything["a"][:n], everything["b"][:n])])
  np.testing.assert_array_equal(app, expected)
  assert app.any(axis=1).all(), "every problem needs an applicable strategy"
  partial = (~app).any(axis=0)
  assert partial.sum() >= 2, "at least two strategies apply only to some problems"
  # Some applicability hinges on factor structure, not parity or units digits.
  assert not app[(everything["a"][:n] == 91) & (everything["b"][:n] == 57), 6].any()
  assert app[(everything["a"][:n] == 91) & (everything["b"][:n] == 56), 6].all()


def test_demonstrations_labelled_and_rewarded(everything):
  ok = everything["ok"]
  np.testing.assert_array_equal(
      ok, np.array([applicable_py(a, b)[s] for a, b, s in
                    zip(everything["a"], everything["b"], everything["strategy"])]))
  for s in range(S):
    mine = ok & (everything["strategy"] == s)
    assert mine.sum() > 100, ENV.strategy_names[s]
    np.testing.assert_array_equal(everything["label"][mine], s, err_msg=ENV.strategy_names[s])
    np.testing.assert_array_equal(everything["reward"][mine], 1.0, err_msg=ENV.strategy_names[s])
  # Inapplicable: all PAD, degenerate, no reward.
  assert (everything["clean"][~ok] == ENV.pad_id).all()
  assert (everything["label"][~ok] == DEGENERATE).all()


def test_demonstrations_fit_and_end_in_eos(everything):
  clean = everything["clean"][everything["ok"]]
  has_eos = (clean == ENV.eos_id).any(axis=1)
  assert has_eos.all()
  lengths = np.argmax(clean == ENV.eos_id, axis=1) + 1
  assert lengths.max() == 63 <= T  # place_value on 90 * 90 and friends


def test_demonstrations_do_correct_arithmetic(everything):
  rng = np.random.default_rng(0)
  idx = rng.choice(np.flatnonzero(everything["ok"]), 1500, replace=False)
  problems = jax.tree.map(lambda x: x[idx], everything["problems"])
  for text, a, b in zip(ENV.render(problems, everything["clean"][idx]),
                        everything["a"][idx], everything["b"][idx]):
    question, steps, answer = steps_of(text)
    assert question == f"{a}*{b}?"
    assert wrong_equations(steps) == 0, text
    assert int(answer) == a * b, text


def test_strategies_differ_in_first_step(everything):
  n = 90 * 90
  ok = everything["ok"].reshape(S, n)
  first = np.array([first_step(t) for t in everything["clean"]]).reshape(S, n)
  for i in range(n):
    firsts = first[ok[:, i], i]
    assert len(set(firsts)) == len(firsts), (everything["a"][i], everything["b"][i], firsts)


def first_step(tokens):
  text = "".join(mul.ITOS[t] for t in np.asarray(tokens).tolist())
  return text.split(";")[0]


def test_slipped_traces_keep_label_and_earn_zero(everything):
  ok = everything["ok_slipped"]
  np.testing.assert_array_equal(ok, everything["ok"])
  slipped, clean = everything["slipped"][ok], everything["clean"][ok]
  changed = (slipped != clean).any(axis=1)
  assert changed.mean() > 0.99  # a few may keep their clean trace (see demonstrate)
  np.testing.assert_array_equal(everything["label_s"][ok], everything["strategy"][ok])
  np.testing.assert_array_equal(everything["reward_s"][ok], np.where(changed, 0.0, 1.0))
  # A slip changes digits only: same skeleton, same copied operands structure.
  rng = np.random.default_rng(1)
  idx = rng.choice(np.flatnonzero(ok), 1500, replace=False)
  problems = jax.tree.map(lambda x: x[idx], everything["problems"])
  texts = ENV.render(problems, everything["slipped"][idx])
  for i, text in zip(idx, texts):
    assert skeleton(everything["slipped"][i]) == skeleton(everything["clean"][i]), text
    _, steps, answer = steps_of(text)
    if (everything["slipped"][i] != everything["clean"][i]).any():
      assert int(answer) != everything["a"][i] * everything["b"][i], text
      # The slip is one wrong value, carried consistently into later steps
      # (halve_double's doublings are not written as equations).
      wrong = wrong_equations(steps)
      assert wrong == 1 or (wrong == 0 and everything["strategy"][i] == 5), text


def test_trace_against_other_problem_earns_zero(everything):
  ok = everything["ok"]
  idx = np.flatnonzero(ok)[::7]
  other = np.roll(idx, 1)
  problems = jax.tree.map(lambda x: x[other], everything["problems"])
  reward, _ = score(problems, everything["clean"][idx], BIG)
  same = everything["a"][idx] * everything["b"][idx] == everything["a"][other] * everything["b"][other]
  np.testing.assert_array_equal(np.asarray(reward), np.where(same, 1.0, 0.0))
  assert (~same).sum() > 1000


def test_truncated_traces_earn_zero(everything):
  rng = np.random.default_rng(2)
  idx = np.flatnonzero(everything["ok"])[::5]
  clean = everything["clean"][idx]
  eos_pos = np.argmax(clean == ENV.eos_id, axis=1)
  cut = rng.integers(0, eos_pos + 1)  # keep tokens [0, cut): EOS is always lost
  pos = np.arange(T)[None, :]
  truncated = np.where(pos < cut[:, None], clean, ENV.pad_id)
  problems = jax.tree.map(lambda x: x[idx], everything["problems"])
  reward, label = score(problems, truncated, BIG)
  assert (np.asarray(reward) == 0).all()
  assert (np.asarray(label) == DEGENERATE).all()


# ---------------------------------------------------------------------------
# Degenerate responses and the answer rule.


def _encode(texts):
  rows = [np.concatenate([ENV.text_to_tokens(t), [ENV.eos_id]]) for t in texts]
  out = np.full((len(rows), T), ENV.pad_id, np.int32)
  for i, r in enumerate(rows):
    out[i, :len(r)] = r
  return out


def test_answer_only_and_no_grammar_are_degenerate_but_rewarded():
  problems = ENV.parse_problems(["37*48"] * 5)
  responses = _encode(["#1776", "37*48=1776;#1776", "1776", "#01776", "#1775"])
  reward, label = score(problems, responses)
  np.testing.assert_array_equal(np.asarray(reward), [1, 1, 0, 0, 0])
  np.testing.assert_array_equal(np.asarray(label), DEGENERATE)


def test_miscopied_numbers_keep_the_label():
  """The label is the strategy the work follows; copying or rounding errors cost
  the reward, not the label (as for a judge reading the work)."""
  problems = ENV.parse_problems(["37*48"] * 6)
  responses = _encode([
      "37*8=296;37*40=1480;296+1480=1776;#1776",
      "37*9=333;37*40=1480;333+1480=1813;#1813",  # reads the wrong digit of b
      "38*8=304;38*40=1520;304+1520=1824;#1824",  # copies the wrong factor
      "48*7=336;48*30=1440;336+1440=1776;#1776",  # by the digits of a
      "37*60=2220;37*12=444;2220-444=1776;#1776",  # rounds 48 to 60: still round_adjust
      "40-3=37;40+8=48;40*40=1600;3*3=9;1600-9=1591;#1591",  # wrong midpoint
  ])
  reward, label = score(problems, responses)
  names = ENV.strategy_names
  want = ["long_by_b", "long_by_b", "long_by_b", "long_by_a", "round_adjust",
          "difference_of_squares"]
  np.testing.assert_array_equal(np.asarray(label), [names.index(w) for w in want])
  np.testing.assert_array_equal(np.asarray(reward), [1, 0, 0, 1, 1, 0])


@hypothesis.given(
    st.lists(st.integers(0, mul.VOCAB_SIZE - 1), min_size=T, max_size=T),
    st.integers(10, 99), st.integers(10, 99))
def test_random_tokens_are_degenerate(tokens, a, b):
  problems = mul.MultiplicationProblems(a=jnp.asarray([a]), b=jnp.asarray([b]))
  reward, label = score(problems, np.asarray([tokens]))
  assert int(label[0]) == DEGENERATE
  assert float(reward[0]) == 0.0


@hypothesis.given(st.integers(10, 99), st.integers(10, 99), st.integers(0, 99999))
def test_reward_is_exact_answer_check(a, b, guess):
  problems = mul.MultiplicationProblems(a=jnp.asarray([a, a]), b=jnp.asarray([b, b]))
  reward, _ = score(problems, _encode([f"#{guess}", f"#{a * b}"]))
  assert float(reward[0]) == float(guess == a * b)
  assert float(reward[1]) == 1.0


def test_score_jit_and_vmap_agree(everything):
  idx = np.arange(0, everything["a"].size, 37)[:64]
  problems = jax.tree.map(lambda x: x[idx], everything["problems"])
  responses = jnp.asarray(everything["slipped"][idx])
  eager = score(problems, responses)
  compiled = jax.jit(jax.vmap(ENV.score))(
      jax.tree.map(lambda x: x.reshape(4, -1), problems), responses.reshape(4, -1, T))
  for x, y in zip(eager, compiled):
    np.testing.assert_array_equal(x, np.asarray(y).reshape(-1))
  np.testing.assert_array_equal(eager[1], everything["label_s"][idx])


# ---------------------------------------------------------------------------
# Problems, prompts, text.


def test_sample_problems_respects_params():
  key_in, key_ood = jax.random.split(jax.random.PRNGKey(3))
  p = ENV.sample_problems(key_in, PARAMS, 4096)
  q = ENV.sample_problems(key_ood, ENV.ood_params(), 4096)
  a, b = np.asarray(p.a), np.asarray(p.b)
  assert not np.any((a >= 50) & (b >= 50))  # at most one large factor ...
  assert len(np.unique(a)) == len(np.unique(b)) == 90  # ... every factor occurs
  # uniform over the 5,600 training problems: a is large in 2,000 of them
  assert abs((a >= 50).mean() - 2000 / 5600) < 0.03
  for x in (q.a, q.b):
    x = np.asarray(x)
    assert x.min() >= 50 and x.max() <= 99
    assert len(np.unique(x)) == 50


def test_canonical_form_is_the_product_and_ood_products_are_beyond_training():
  pairs = mul.MultiplicationProblems(a=jnp.asarray([24, 12, 48, 36, 99, 97], jnp.int32),
                                     b=jnp.asarray([36, 72, 18, 24, 98, 96], jnp.int32))
  np.testing.assert_array_equal(np.asarray(ENV.canonical_form(pairs))[:, 0],
                                [864, 864, 864, 864, 9702, 9312])
  # 9702 = 99 * 98 only (both large); 9312 = 97 * 96 only; 864 = 24 * 36 = 12 * 72.
  np.testing.assert_array_equal(np.asarray(ENV.beyond_training(pairs)),
                                [False, False, False, False, True, True])
  # Beyond training: no 2 x 2 pair with at most one factor of 50 or more has the product.
  by_hand = {n for n in range(100, 10_000)
             if any(n % a == 0 and 10 <= n // a <= 99 and not (a >= 50 and n // a >= 50)
                    for a in range(10, 100))}
  ood = ENV.sample_problems(jax.random.PRNGKey(5), ENV.ood_params(), 512)
  products = np.asarray(ood.a) * np.asarray(ood.b)
  np.testing.assert_array_equal(np.asarray(ENV.beyond_training(ood)),
                                [int(n) not in by_hand for n in products])


def test_prompt_tokens_spell_the_question():
  problems = ENV.sample_problems(jax.random.PRNGKey(4), PARAMS, 64)
  prompts = np.asarray(ENV.prompt_tokens(problems))
  assert prompts.shape == (64, 6)
  texts = ["".join(mul.ITOS[t] for t in row) for row in prompts]
  assert texts == [f"{a}*{b}?" for a, b in zip(np.asarray(problems.a), np.asarray(problems.b))]


def test_render_round_trips(everything):
  idx = np.flatnonzero(everything["ok"])[::97]
  problems = jax.tree.map(lambda x: x[idx], everything["problems"])
  responses = everything["slipped"][idx]
  for text, a, b, row in zip(ENV.render(problems, responses), everything["a"][idx],
                             everything["b"][idx], responses):
    question, response = text.split(" ", 1)
    parsed = ENV.parse_problems([question])
    assert (int(parsed.a[0]), int(parsed.b[0])) == (a, b)
    n = int(np.argmax(row == ENV.eos_id))
    np.testing.assert_array_equal(ENV.text_to_tokens(response), row[:n])
  cut = ENV.render(problems, np.full((len(idx), T), 3))
  assert all(t.endswith("[no EOS]") for t in cut)


@pytest.mark.parametrize("text", [
    "What is 37 times 48?", "37*48", "37 * 48", "37 x 48", "37x48", "37 × 48",
    "  what is 37*48 ", "Compute 37·48.", "(37)*(48)", "37*48 = ?", "37 * 48 =",
    "Multiply 37 by 48", "What is the product of 37 and 48?", "Mul(37, 48)",
    "Mul(Integer(37), Integer(48))", "37 multiplied by 48", "37*48?",
    "Product of 37 and 48.", "Work out 37 * 48.", "Calculate 37*48.", "Multiply 37 and 48."])
def test_parse_problems_accepts(text):
  problems = ENV.parse_problems([text])
  assert (int(problems.a[0]), int(problems.b[0])) == (37, 48)


@pytest.mark.parametrize("text, why", [
    ("What is 37 plus 48?", "Cannot parse"),
    ("37*", "Cannot parse"),
    ("hello", "Cannot parse"),
    ("37*48*2", "Cannot parse"),
    ("-37*48", "the first factor -37 is negative"),
    ("3.7*48", "the first factor 3.7 is not a whole number"),
    # Written like DeepMind's mathematics_dataset: parsed, then refused saying why.
    ("Product of 4 and 20.", "the first factor 4 must have exactly 2 digits"),
    ("Calculate -0.2*4.", "the first factor -0.2 is not a whole number"),
    ("What is -37 times 48?", "the first factor -37 is negative"),
    ("Multiply 37 and -4.8.", "the second factor -4.8 is not a whole number"),
    ("Work out 37 * 480.", "the second factor 480 must have exactly 2 digits"),
    ("137*48", "out of range"),
    ("7*48", "out of range"),
    ("07*48", "out of range"),
    ("37*480", "out of range"),
])
def test_parse_problems_rejects(text, why):
  with pytest.raises(ValueError) as err:
    ENV.parse_problems(["37*48", text])
  assert repr(text) in str(err.value) and why in str(err.value)


@pytest.mark.slow
def test_other_digit_counts_label_their_demonstrations():
  env, params = envs.make("multiplication", digits_a=3, digits_b=2)
  assert env.max_response_len == 100
  problems = env.sample_problems(jax.random.PRNGKey(5), params, 512)
  a, b = np.asarray(problems.a), np.asarray(problems.b)
  assert a.min() >= 100 and b.max() <= 99
  for s in range(S):
    responses, ok = env.demonstrate(jax.random.PRNGKey(s), problems, jnp.full(512, s))
    reward, label = env.score(problems, responses)
    ok = np.asarray(ok)
    np.testing.assert_array_equal(np.asarray(label)[ok], s)
    np.testing.assert_array_equal(np.asarray(reward)[ok], 1.0)
    if s == mul.STRATEGY_NAMES.index("karatsuba"):
      assert not ok.any()


def test_bad_constructor_args():
  with pytest.raises(ValueError, match="digits_a"):
    envs.make("multiplication", digits_a=5)


@pytest.mark.slow
def test_longest_trace_table():
  for digits, longest in mul_env.LONGEST.items():
    if digits != (3, 3):  # (3, 3) is sampled, with a margin
      assert mul_env.longest_trace(*digits) == longest
