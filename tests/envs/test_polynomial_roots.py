"""Tests for envs/polynomial_roots.py.

Expected values come from independent Python computation (polynomial evaluation,
brute-force root search, hand-written traces), never from the env's own output.
"""

import itertools

import hypothesis
import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs import polynomial_roots as pr
from envs.polynomial_roots import env as pr_env
from envs.polynomial_roots import problems as rp
from polyepo.env_api import DEGENERATE

S = len(pr.STRATEGY_NAMES)


@pytest.fixture(scope="module")
def env():
  return envs.make("polynomial_roots")[0]


def _concat(a, b):
  return jax.tree_util.tree_map(lambda x, y: jnp.concatenate([x, y]), a, b)


def _take(problems, idx):
  return jax.tree_util.tree_map(lambda x: x[np.asarray(idx)], problems)


@pytest.fixture(scope="module")
def problems(env):
  """In-distribution and OOD problems, so every strategy has cases."""
  test = env.sample_problems(jax.random.PRNGKey(0), env.default_params(), 256)
  ood = env.sample_problems(jax.random.PRNGKey(1), env.ood_params(), 256)
  return _concat(test, ood)


@pytest.fixture(scope="module")
def demos(env, problems):
  """Clean and slipped demonstrations of every strategy: dict s -> arrays."""
  b = problems.degree.shape[0]
  out = {}
  for s in range(S):
    ids = jnp.full((b,), s, jnp.int32)
    clean, ok = env.demonstrate(jax.random.PRNGKey(10 + s), problems, ids)
    slipped, ok_s = env.demonstrate(jax.random.PRNGKey(20 + s), problems, ids, slip_rate=1.0)
    out[s] = (np.asarray(clean), np.asarray(ok), np.asarray(slipped), np.asarray(ok_s))
  return out


def _tokens(env, text, length=None):
  """Tokens of a hand-written response (spaces ignored), PAD-filled."""
  tok = list(pr.PolynomialRoots.text_to_tokens(text))
  length = length or env.max_response_len
  return np.asarray(tok + [env.pad_id] * (length - len(tok)), np.int32)


def _score_texts(env, question, texts, rows=16):
  """Scores hand-written responses to one question (padded to `rows`, so
  every call reuses one compiled shape)."""
  assert len(texts) <= rows
  problems = env.parse_problems([question] * rows)
  responses = np.stack([_tokens(env, t) for t in texts]
                       + [_tokens(env, "")] * (rows - len(texts)))
  reward, label = env.score(problems, responses)
  return np.asarray(reward)[:len(texts)], np.asarray(label)[:len(texts)]


def _eval_poly(coeffs, x):
  return sum(int(c) * x**k for k, c in enumerate(coeffs))


# -- problems -----------------------------------------------------------------


def test_sampled_roots_are_roots(env, problems):
  for d, c, r in zip(np.asarray(problems.degree), np.asarray(problems.coeffs),
                     np.asarray(problems.roots)):
    assert d in (2, 3)
    roots = r[:d].tolist()
    assert roots == sorted(roots)
    assert max(abs(x) for x in roots) <= env.max_root
    assert 1 <= c[d] <= env.max_lead and all(c[d + 1:] == 0)
    for x in roots:
      assert _eval_poly(c, x) == 0
    # Multiplicities: c = a * prod(x - r), expanded independently.
    poly = np.array([int(c[d])])
    for x in roots:
      poly = np.convolve(poly, [1, -x])
    np.testing.assert_array_equal(poly[::-1], c[:d + 1])


def test_sampling_respects_params(env):
  p = env.sample_problems(jax.random.PRNGKey(3), env.default_params(), 256)
  deg = np.asarray(p.degree)
  assert 0.2 < (deg == 3).mean() < 0.4
  assert np.abs(np.asarray(p.roots)).max() == 12
  lead = np.asarray(p.coeffs)[np.arange(256), deg]
  assert set(lead.tolist()) == {1, 2, 3}
  ood = env.sample_problems(jax.random.PRNGKey(3), env.ood_params(), 256)
  assert np.all(np.asarray(ood.degree) == 3)
  assert set(np.asarray(ood.coeffs)[:, 3].tolist()) == {1, 2, 3}
  assert np.abs(np.asarray(ood.roots)).max() == 15  # roots beyond training's (splits keep them)


def _problem(degree, roots, lead):
  return pr.PolynomialProblems(
      degree=jnp.asarray([degree], jnp.int32),
      coeffs=rp.coeffs_from_roots(jnp.asarray([degree], jnp.int32),
                                  jnp.asarray([roots], jnp.int32), jnp.asarray([lead], jnp.int32)),
      roots=jnp.asarray([roots], jnp.int32))


@pytest.mark.parametrize("degree, roots, lead, form", [
    (2, (-3, 5, 0), 1, (2, -5, 3, 0)),     # mirror (-5, 3) is lexicographically smaller
    (2, (-5, 3, 0), 2, (2, -5, 3, 0)),     # p(-x) of the above, another lead
    (3, (0, 2, 7), 1, (2, -7, -2, 0)),     # x * q(x): q's roots (2, 7), mirrored
    (3, (-7, -2, 0), 3, (2, -7, -2, 0)),
    (3, (0, 0, 4), 1, (2, -4, 0, 0)),      # one zero removed, one kept
    (3, (-1, 2, 9), 1, (3, -9, -2, 1)),
])
def test_canonical_form_by_hand(env, degree, roots, lead, form):
  np.testing.assert_array_equal(np.asarray(env.canonical_form(_problem(degree, roots, lead)))[0],
                                form)
  assert _eval_poly(np.asarray(_problem(degree, roots, lead).coeffs)[0], roots[0]) == 0


def test_beyond_training_is_a_root_over_twelve(env):
  near, far = _problem(3, (-12, 0, 12), 1), _problem(3, (-13, 0, 1), 1)
  assert not bool(env.beyond_training(near)[0]) and bool(env.beyond_training(far)[0])


def test_params_vmappable(env):
  params = jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), env.default_params())
  params = params.replace(cubic_prob=jnp.array([0.0, 1.0]))
  keys = jax.random.split(jax.random.PRNGKey(0), 2)
  p = jax.vmap(lambda k, pa: env.sample_problems(k, pa, 64))(keys, params)
  assert np.all(np.asarray(p.degree[0]) == 2) and np.all(np.asarray(p.degree[1]) == 3)


def test_prompt_tokens_spell_the_polynomial(env, problems):
  prompts = np.asarray(env.prompt_tokens(problems))
  assert prompts.shape == (problems.degree.shape[0], env.prompt_len)
  for row, d, c in zip(prompts[:64], np.asarray(problems.degree), np.asarray(problems.coeffs)):
    text = "".join(pr.ITOS[t] for t in row).lstrip("_")
    want = "+".join(f"{c[k]}x" + {3: "³", 2: "²", 1: ""}[k] for k in range(d, 0, -1))
    assert text == f"{want}+{c[0]}=0"


def test_every_problem_has_an_applicable_strategy(env, problems):
  app = np.asarray(env.applicable(problems))
  assert app.shape == (problems.degree.shape[0], S)
  assert app.any(axis=1).all()
  assert app[:, 0].all()  # factor


def test_applicability_matches_brute_force(env, problems):
  app = np.asarray(env.applicable(problems))
  names = pr.STRATEGY_NAMES
  for row, d, c, r in zip(app, np.asarray(problems.degree), np.asarray(problems.coeffs),
                          np.asarray(problems.roots)):
    roots = r[:d].tolist()
    quad = d == 2
    assert row[names.index("quadratic_formula")] == quad
    assert row[names.index("complete_square")] == (quad and (roots[0] - roots[1]) % 2 == 0)
    assert row[names.index("grouping")] == (
        not quad and any(x + y == 0 for x, y in itertools.combinations(roots, 2)))
    assert row[names.index("depressed_cubic")] == (not quad and roots[0] + roots[2] == 2 * roots[1])
    # The searches also need the trace to fit the budget: only one direction.
    if row[names.index("vieta_pairs")]:
      assert quad and c[0] != 0
    if row[names.index("rational_root")]:
      assert c[0] != 0 and (quad or len(set(roots)) > 1)
    if row[names.index("integer_scan")]:
      assert quad or len(set(roots)) > 1


def test_some_problems_need_a_minority_strategy(env, problems):
  """Budget-limited searches and structural strategies vary across problems."""
  app = np.asarray(env.applicable(problems))
  frac = app.mean(axis=0)
  assert np.all(frac[1:] > 0.02) and np.all(frac[1:] < 0.99)


# -- demonstrations and scoring -------------------------------------------------


@pytest.mark.parametrize("s", range(S))
def test_demonstrations_are_correct_and_labelled(env, problems, demos, s):
  clean, ok, _, _ = demos[s]
  app = np.asarray(env.applicable(problems))[:, s]
  np.testing.assert_array_equal(ok, app)
  assert ok.sum() >= 10, pr.STRATEGY_NAMES[s]
  reward, label = env.score(problems, clean)
  np.testing.assert_array_equal(np.asarray(reward)[ok], 1.0)
  np.testing.assert_array_equal(np.asarray(label)[ok], s)
  assert np.all(clean[~ok] == env.pad_id)
  # Full trace, then EOS, then PAD.
  for row in clean[ok]:
    n = int(np.argmax(row == env.eos_id))
    assert row[n] == env.eos_id and np.all(row[n + 1:] == env.pad_id)
    assert not np.any(row[:n] == env.pad_id)


@pytest.mark.parametrize("s", range(S))
def test_slipped_traces_keep_label_and_earn_zero(env, problems, demos, s):
  clean, ok, slipped, ok_s = demos[s]
  np.testing.assert_array_equal(ok, ok_s)
  reward, label = env.score(problems, slipped)
  np.testing.assert_array_equal(np.asarray(reward)[ok], 0.0)
  np.testing.assert_array_equal(np.asarray(label)[ok], s)
  # Most slips are in the work, not only in the copied answer.
  before_answer = [
      list(c[:np.argmax(c == pr.ANSWER)]) != list(w[:np.argmax(w == pr.ANSWER)])
      for c, w in zip(clean[ok], slipped[ok])]
  assert np.mean(before_answer) > 0.5, pr.STRATEGY_NAMES[s]


def test_slip_rate_zero_and_partial(env, problems):
  ids = jnp.zeros(problems.degree.shape, jnp.int32)
  _, _ = env.demonstrate(jax.random.PRNGKey(0), problems, ids, slip_rate=0.0)
  toks, ok = env.demonstrate(jax.random.PRNGKey(0), problems, ids, slip_rate=0.5)
  reward, _ = env.score(problems, toks)
  assert 0.35 < float(np.mean(np.asarray(reward)[np.asarray(ok)])) < 0.65


def test_traces_fit_64_tokens_by_default(env, demos):
  assert env.max_response_len == 64
  for s in range(S):
    clean, ok, _, _ = demos[s]
    assert np.all((clean[ok] == env.eos_id).sum(1) == 1)


def test_scored_against_another_problem_earns_zero(env, problems, demos):
  roots = np.asarray(problems.roots)
  deg = np.asarray(problems.degree)
  other = np.roll(np.arange(deg.shape[0]), 1)
  differs = np.array([roots[i, :deg[i]].tolist() != roots[j, :deg[j]].tolist()
                      for i, j in zip(range(deg.shape[0]), other)])
  for s in range(S):
    clean, ok, _, _ = demos[s]
    reward, _ = env.score(_take(problems, other), clean)
    np.testing.assert_array_equal(np.asarray(reward)[ok & differs], 0.0)


def test_truncated_traces_earn_zero(env, problems, demos):
  rng = np.random.default_rng(0)
  for s in range(S):
    clean, ok, _, _ = demos[s]
    rows = clean.copy()
    eos = np.argmax(rows == env.eos_id, axis=1)
    no_eos = rows.copy()
    no_eos[np.arange(len(rows)), eos] = env.pad_id
    cut = rows.copy()
    for i, n in enumerate(eos):
      cut[i, rng.integers(0, n + 1):] = env.pad_id
    for bad in (no_eos, cut):
      reward, label = env.score(problems, bad)
      np.testing.assert_array_equal(np.asarray(reward), 0.0)
      np.testing.assert_array_equal(np.asarray(label), DEGENERATE)
    assert ok.any()


def test_score_is_jitted_and_vmapped(env, problems, demos):
  clean, ok, slipped, _ = demos[4]
  mixed = np.where(np.arange(len(ok))[:, None] % 2 == 0, clean, slipped)
  reward, label = env.score(problems, mixed)
  j_reward, j_label = jax.jit(env.score)(problems, mixed)
  np.testing.assert_array_equal(np.asarray(reward), np.asarray(j_reward))
  np.testing.assert_array_equal(np.asarray(label), np.asarray(j_label))
  half = problems.degree.shape[0] // 2
  stacked = jax.tree_util.tree_map(lambda x: x.reshape((2, half) + x.shape[1:]), problems)
  v_reward, v_label = jax.vmap(env.score)(stacked, mixed.reshape(2, half, -1))
  np.testing.assert_array_equal(np.asarray(v_reward).reshape(-1), np.asarray(reward))
  np.testing.assert_array_equal(np.asarray(v_label).reshape(-1), np.asarray(label))
  # Rewards where ok: clean even rows right, slipped odd rows wrong.
  want = (np.arange(len(ok)) % 2 == 0).astype(np.float32)
  np.testing.assert_array_equal(np.asarray(reward)[ok], want[ok])


# -- hand-written traces ----------------------------------------------------------

HAND = {
    # x^2 - 5x + 6 = (x - 2)(x - 3), worked by hand.
    "factor": "1(x+-2)(x+-3)#2,3$",
    "quadratic_formula": "D=-5*-5+-4*1*6=1;√1=1;(5±1)/2#2,3$",
    "vieta_pairs": "S=5,P=6;1+6=7;2+3=5#2,3$",
    "rational_root": "P=6;1|2;-1|12;2|0;S=5#2,3$",
    "integer_scan": "f0=6;f1=2;f-1=12;f2=0;S=5#2,3$",
}


@pytest.mark.parametrize("name", sorted(HAND))
def test_hand_written_quadratic_traces(env, name):
  reward, label = _score_texts(env, "x^2 - 5x + 6 = 0", [HAND[name]])
  assert reward[0] == 1.0 and label[0] == pr.STRATEGY_NAMES.index(name)


def test_hand_written_cubic_and_shift_traces(env):
  cases = [
      ("x^2 - 6x + 8 = 0", "(x+-3)²=9+-8=1;x=3±1#2,4$", "complete_square"),
      ("x^3 - x^2 - 4x + 4 = 0", "x²(1x+-1)+-4(1x+-1);x=1,±2#-2,1,2$", "grouping"),
      ("x^3 - 6x^2 + 11x - 6 = 0", "x=y+2;y³+-1y=0;y=0,±1#1,2,3$", "depressed_cubic"),
      ("x^3 - 6x^2 + 11x - 6 = 0", "1(x+-1)(x+-2)(x+-3)#1,2,3$", "factor"),
      ("x^3 - 3x + 2 = 0", "P=-2;1|0;-1|4;2|4;-2|0;S=0#-2,1,1$", "rational_root"),
  ]
  for question, text, name in cases:
    reward, label = _score_texts(env, question, [text])
    assert (reward[0], label[0]) == (1.0, pr.STRATEGY_NAMES.index(name)), text


def test_miscopied_numbers_keep_the_label(env):
  """A miscopied coefficient keeps the label (and costs the reward); a broken
  literal of the grammar does not."""
  texts = [
      "D=-6*-5+-4*1*6=1;√1=1;(5±1)/2#2,3$",  # b miscopied
      "2(x+-2)(x+-3)#2,4$",  # wrong leading coefficient
      "f0=7;f1=2;f-1=12;f2=0;S=5#2,3$",  # f(0) is c0 = 6
      "D=-5*-5+-3*1*6=7;√7=3;(5±3)/2#1,4$",  # -4 is a literal of the formula
      "f1=7;f1=2;f-1=12;f2=0;S=5#2,3$",  # the scan starts at 0
  ]
  reward, label = _score_texts(env, "x^2 - 5x + 6 = 0", texts)
  names = ["quadratic_formula", "factor", "integer_scan"]
  np.testing.assert_array_equal(label, [pr.STRATEGY_NAMES.index(n) for n in names]
                                + [DEGENERATE, DEGENERATE])
  np.testing.assert_array_equal(reward, [1, 0, 1, 0, 1])


def test_no_work_is_degenerate(env):
  texts = [
      "#2,3$",  # answer only: reward counts, no label
      "2,3$",
      "S=5,P=6#2,3$",  # no pair tried
  ]
  reward, label = _score_texts(env, "x^2 - 5x + 6 = 0", texts)
  np.testing.assert_array_equal(label, DEGENERATE)
  np.testing.assert_array_equal(reward, [1, 0, 1])


def test_canonical_answer_order(env):
  """Roots ascending, repeated by multiplicity, exactly `degree` of them."""
  q2, q3 = "x^2 - x - 12 = 0", "x^3 - 3x + 2 = 0"  # roots -3, 4 and -2, 1, 1
  reward, _ = _score_texts(env, q2, ["#-3,4$", "#4,-3$", "#-3,4,4$", "#-3$", "#-3,,4$",
                                     "#-3,-4$", "#--3,4$", "#-3,04$"])
  np.testing.assert_array_equal(reward, [1, 0, 0, 0, 0, 0, 0, 0])
  answers = [list(p) for p in set(itertools.permutations([-2, 1, 1]))] + [[-2, 1], [-2, 1, 1, 1]]
  texts = ["#" + ",".join(map(str, a)) + "$" for a in answers]
  reward, _ = _score_texts(env, q3, texts)
  want = [float(a == [-2, 1, 1]) for a in answers]
  np.testing.assert_array_equal(reward, want)
  # The last '#' counts; tokens after EOS are ignored.
  reward, _ = _score_texts(env, q2, ["#1,2;#-3,4$", "#-3,4$#1,1"])
  np.testing.assert_array_equal(reward, [1, 1])


@hypothesis.settings(max_examples=200, deadline=None)
@hypothesis.given(st.lists(st.integers(0, pr.VOCAB_SIZE - 1), min_size=64, max_size=64),
                  st.integers(0, 63))
def test_random_tokens_are_degenerate(tokens, eos_at):
  env = _ENV
  problems = env.parse_problems(["x^2 - 5x + 6 = 0"])
  tokens = np.asarray(tokens, np.int32)
  for row in (tokens, np.where(np.arange(64) == eos_at, env.eos_id, tokens)):
    reward, label = env.score(problems, row[None])
    assert float(reward[0]) == 0.0 and int(label[0]) == DEGENERATE


_ENV = envs.make("polynomial_roots")[0]


# -- text ---------------------------------------------------------------------


def test_render_round_trips(env, problems, demos):
  clean, ok, _, _ = demos[5]
  idx = np.where(ok)[0][:32]
  sub = _take(problems, idx)
  lines = env.render(sub, clean[idx])
  questions = [line.split(":  ")[0] for line in lines]
  back = env.parse_problems(questions)
  for field in ("degree", "coeffs", "roots"):
    np.testing.assert_array_equal(np.asarray(getattr(back, field)), np.asarray(getattr(sub, field)))
  for line, row in zip(lines, clean[idx]):
    toks = env.text_to_tokens(line.split(":  ")[1])
    n = int(np.argmax(row == env.eos_id))
    np.testing.assert_array_equal(toks, row[:n])
  cut = env.render(_take(sub, [0]), np.full((1, 64), env.pad_id))
  assert cut[0].endswith("[no EOS]")


@pytest.mark.parametrize("text, degree, coeffs, roots", [
    ("Solve 2*x**2 - 10*x + 12 = 0 for x.", 2, [12, -10, 2, 0], [2, 3, 0]),
    ("Find the roots of x**3 - 6*x**2 + 11*x - 6.", 3, [-6, 11, -6, 1], [1, 2, 3]),
    ("x^2 - 5x + 6 = 0", 2, [6, -5, 1, 0], [2, 3, 0]),
    ("x² = 5x - 6", 2, [6, -5, 1, 0], [2, 3, 0]),
    ("-x^2 + 5x - 6 = 0", 2, [6, -5, 1, 0], [2, 3, 0]),
    ("Eq(x**2 - 4, 0)", 2, [-4, 0, 1, 0], [-2, 2, 0]),
    ("solve(x**3 - 3*x + 2, x)", 3, [2, -3, 0, 1], [-2, 1, 1]),
    ("What are the roots of 3x^3 = 0?", 3, [0, 0, 0, 3], [0, 0, 0]),
    ("x**2 + 8*x + 16", 2, [16, 8, 1, 0], [-4, -4, 0]),
    # Any one variable, written like DeepMind's mathematics_dataset.
    ("Solve -2*c**3 - 8*c**2 - 2*c + 12 = 0.", 3, [-12, 2, 8, 2], [-3, -2, 1]),
    ("Let 2*s**2 - 10*s + 12 = 0. Calculate s.", 2, [12, -10, 2, 0], [2, 3, 0]),
    ("Solve -3*h**2 + 12 = 0 for h.", 2, [-12, 0, 3, 0], [-2, 2, 0]),
    ("Suppose 3*a**2 - 3 = 0. What is a?", 2, [-3, 0, 3, 0], [-1, 1, 0]),
    ("Determine y, given that y**3 - 7*y - 6 = 0.", 3, [-6, -7, 0, 1], [-2, -1, 3]),
    ("Find a root of x^2 - 4 = 0.", 2, [-4, 0, 1, 0], [-2, 2, 0]),
])
def test_parse_problems_accepts(env, text, degree, coeffs, roots):
  p = env.parse_problems([text])
  assert int(p.degree[0]) == degree
  np.testing.assert_array_equal(np.asarray(p.coeffs[0]), coeffs)
  np.testing.assert_array_equal(np.asarray(p.roots[0]), roots)
  c = np.asarray(p.coeffs[0])
  for r in np.asarray(p.roots[0])[:degree]:
    assert _eval_poly(c, int(r)) == 0


@pytest.mark.parametrize("text, why", [
    ("x^2 - 2 = 0", "integer roots"),
    ("6x^2 - 5x + 1 = 0", "out of range"),  # leading coefficient 6 > max_lead 5
    ("2x^2 - 3x + 1 = 0", "integer roots"),  # root 1/2
    ("x^4 - 1 = 0", "degree"),
    ("x - 1 = 0", "degree"),
    ("x^2 - 400 = 0", "out of range"),
    ("x^2 + 1 = 0", "integer roots"),
    ("what is the weather", "Cannot parse"),
    ("x^2 - 2.5x + 1 = 0", "integers"),
    ("x^2 - 5x + 6 = 0 = 1", "Cannot parse"),
    ("x^2 -* 5x = 0", "Cannot parse"),
    # Parsed, then refused saying why.
    ("Solve -2*c**3 - 72*c**2 - 768*c - 2048 = 0.", "roots [-16, -16, -4] exceed |r| <= 15"),
    ("Let 7*k**2 - 7 = 0. Calculate k.", "leading coefficient 7 exceeds 5"),
    ("Solve -3*h**2/2 - 24*h - 45 = 0 for h.", "coefficients must be integers"),
    ("Solve z**4 - 1 = 0 for z.", "degree 4"),
    ("Solve a*b**2 + 2 = 0.", "more than one variable (a, b)"),
])
def test_parse_problems_rejects(env, text, why):
  with pytest.raises(ValueError) as err:
    env.parse_problems([text])
  assert repr(text) in str(err.value) and why in str(err.value)


def test_grammars_start_differently():
  """Two strategies' traces already differ in their first two symbols."""
  heads = [" ".join(s.grammar.split()[:2]) for s in pr.STRATEGIES]
  assert len(set(heads)) == len(heads)
  dfa = pr_env.grammar()
  assert dfa.accepts.any(0).all() and (dfa.accepts.sum(1) <= 1).all()  # no overlap
