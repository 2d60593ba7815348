"""The `Multiplication` env: jitted demonstrations and scoring over the strategies."""

import functools
from typing import Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from envs.kit import env as env_lib
from envs.kit import grammar as grammar_lib
from envs.kit import strategy as strategy_lib
from envs.kit import symbols
from envs.kit.trace import NO_SLIP, Slip, Trace
from envs.multiplication import parse
from envs.multiplication import problems as problems_lib
from envs.multiplication.strategies import STRATEGIES

STOI = problems_lib.STOI
EOS, PAD = problems_lib.VOCAB.eos_id, problems_lib.VOCAB.pad_id


def _stack(rows, fill, dtype):
  """Rows of scalars (lists of different lengths) padded with `fill`: [S, M]."""
  width = max(1, max(len(r) for r in rows))
  return jnp.stack([jnp.stack([jnp.asarray(x, dtype) for x in r]
                              + [jnp.asarray(fill, dtype)] * (width - len(r))) for r in rows])


def _traces(a, b, da, db, slip: Slip = NO_SLIP):
  """Every strategy's trace of one problem a * b (scalars).

  Returns:
    kinds, values: i32[S, L]; answers: i32[S]; site_on: bool[S, M], which slip
    sites (computed numbers) are written; site_values: i32[S, M], their values
    before the slip.
  """
  traces, answers = [], []
  for strategy in STRATEGIES:
    t = Trace(STOI, slip=slip)
    answers.append(jnp.asarray(strategy.build(t, a, b, da, db), jnp.int32))
    traces.append(t)
  length = max(len(t) for t in traces)
  kinds, values = zip(*(t.arrays(length) for t in traces))
  return (jnp.stack(kinds), jnp.stack(values), jnp.stack(answers),
          _stack([t.site_on for t in traces], False, bool),
          _stack([t.site_values for t in traces], 0, jnp.int32))


@functools.lru_cache(maxsize=None)
def grammar(da: int, db: int) -> grammar_lib.Grammar:
  """The compiled step grammars of the strategies for da x db digits."""
  return grammar_lib.compile_grammars([s.grammar(da, db) for s in STRATEGIES], STOI, EOS)


@functools.lru_cache(maxsize=None)
def longest_trace(da: int, db: int) -> int:
  """Longest correct trace (EOS included) over all problems, or a large sample (+2)."""
  lo_a, hi_a, lo_b, hi_b = 10**(da - 1), 10**da, 10**(db - 1), 10**db
  if (hi_a - lo_a) * (hi_b - lo_b) <= 200_000:
    a, b = np.meshgrid(np.arange(lo_a, hi_a), np.arange(lo_b, hi_b), indexing="ij")
    a, b, margin = a.ravel(), b.ravel(), 0
  else:
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.integers(lo_a, hi_a, 200_000), [hi_a - 1, hi_a - 2]])
    b = np.concatenate([rng.integers(lo_b, hi_b, 200_000), [hi_b - 1, hi_b - 1]])
    margin = 2

  @jax.jit
  def lengths(a, b):
    def one(a, b):
      kinds, values, _, _, _ = _traces(a, b, da, db)
      lens = symbols.symbol_lengths(kinds, values).sum(-1)
      return jnp.max(jnp.where(problems_lib.applicable(a, b, da, db), lens, 0))
    return jnp.max(jax.vmap(one)(a, b))

  return int(lengths(jnp.asarray(a, jnp.int32), jnp.asarray(b, jnp.int32))) + margin


LONGEST = {(2, 2): 63, (2, 3): 100, (3, 2): 100, (3, 3): 161}
"""`longest_trace` for each digit pair, precomputed (a test recomputes 2 x 2)."""


def _slip_value(v, u, sign):
  """v changed by +-10^j in one digit (j from u in [0, 1)), keeping its length."""
  nd = symbols.num_digits(v)
  delta = symbols.pow10(jnp.minimum((u * nd).astype(jnp.int32), nd - 1))
  up = v + sign * delta
  ok = (up >= 0) & (symbols.num_digits(up) == nd)
  return jnp.where(ok, up, v - sign * delta)


@functools.partial(jax.jit, static_argnums=(5, 6, 7))
def _demonstrate(key, a, b, strategy_ids, slip_rate, da, db, max_len):
  """Batched `Multiplication.demonstrate` for static sizes."""
  k_slip, k_step, k_pos, k_sign = jax.random.split(key, 4)
  n = a.shape[0]
  do_slip = jax.random.uniform(k_slip, (n,)) < slip_rate
  u_step = jax.random.uniform(k_step, (n,))
  u_pos = jax.random.uniform(k_pos, (n,))
  sign = jnp.where(jax.random.bernoulli(k_sign, 0.5, (n,)), 1, -1)

  def one(a, b, s, do_slip, u_step, u_pos, sign):
    kinds, values, _, site_on, site_values = _traces(a, b, da, db)
    clean, _ = symbols.symbols_to_tokens(kinds[s], values[s], max_len, PAD)
    # The slip falls on a uniformly drawn written site, one digit up or down.
    count = jnp.sum(site_on[s])
    target = jnp.minimum((u_step * count).astype(jnp.int32), count - 1)
    site = jnp.where(do_slip & (count > 0), jnp.argmax(jnp.cumsum(site_on[s]) > target), -1)
    value = site_values[s][jnp.maximum(site, 0)]
    deltas = jnp.stack([_slip_value(value, u_pos, sign),
                        _slip_value(value, u_pos, -sign)]) - value

    def write(delta):
      kinds, values, answers, _, _ = _traces(a, b, da, db, Slip(site, delta, jnp.int32(0)))
      tokens, fits = symbols.symbols_to_tokens(kinds[s], values[s], max_len, PAD)
      # A slip may not make a later value negative (e.g. m^2 - d^2 < 0).
      positive = jnp.all((kinds[s] != symbols.NUM) | (values[s] >= 0))
      return tokens, fits & positive & (answers[s] != a * b)

    slipped, good = jax.vmap(write)(deltas)
    return jnp.where(good[0], slipped[0], jnp.where(good[1], slipped[1], clean))

  responses = jax.vmap(one)(a, b, strategy_ids, do_slip, u_step, u_pos, sign)
  ok = jnp.take_along_axis(problems_lib.applicable(a, b, da, db), strategy_ids[:, None], 1)[:, 0]
  return jnp.where(ok[:, None], responses, PAD), ok


@functools.partial(jax.jit, static_argnums=(3, 4))
def _score(a, b, responses, da, db):
  """Batched `Multiplication.score` for static sizes."""
  dfa = grammar(da, db)
  num_symbols = min(responses.shape[1], dfa.max_symbols or responses.shape[1])

  def one(a, b, tokens):
    sym = symbols.tokens_to_symbols(tokens, eos_id=EOS, num_symbols=num_symbols)
    label = strategy_lib.label(dfa, STRATEGIES, sym, problems_lib.MultiplicationProblems(a, b))
    correct = ((sym.final_kind == symbols.NUM) & (sym.marker == problems_lib.ANSWER)
               & (sym.final_value == a * b))
    return correct.astype(jnp.float32), label

  return jax.vmap(one)(a, b, responses)


class Multiplication(env_lib.KitEnv):
  """`a * b` with exact rewards and strategy labels; see `envs.multiplication`.

  Args:
    digits_a: digits of the first factor (2 or 3).
    digits_b: digits of the second factor (2 or 3).
    max_response_len: T; default: the longest correct trace (64 for 2 x 2).
  """

  vocab = problems_lib.VOCAB
  strategies = STRATEGIES

  # The base model's pretraining defaults (configs/pretrain.py; any field of
  # polyepo.pretrain.PretrainConfig). Competence mixture: every applicable
  # strategy about equally likely, the two long multiplications (learned first)
  # with less weight than the strategies whose traces are harder to learn.
  # Preference mixture: one dominant strategy, a middle and a tail; as shares of
  # the corpus once each problem is restricted to the strategies that apply
  # (training problems): long_by_b 55%, long_by_a 22%, place_value 13%,
  # round_adjust 5.4%, difference_of_squares 2.6%, halve_double 0.44%,
  # factor_out 0.70%, karatsuba 0.01%. The long traces are the hard part (the
  # accuracy is bounded by learning). Held out by product (polyepo.splits), no
  # answer of a held-out exercise is ever written in training, and 2,700
  # competence steps are what it takes to carry 6 strategies out competently on
  # `validation` (1,350 steps: 3 from 2 families; docs/base-models.md). The
  # preference stage is long: cross-entropy lowers a rare token's probability
  # at a rate proportional to it, so the rarest strategy's share falls ever
  # more slowly, and it takes this many steps to bring one strategy under the
  # rarest-strategy target (shares by step: docs/base-models.md; 900 steps
  # left halve_double just over it). Weight decay 1.0, as polynomial roots':
  # at 0.01 the model memorised its training exercises (on the previous
  # splits: 4 strategies competent on held-out ones, not 6).
  pretrain_defaults = dict(
      mixture=(1.0, 1.0, 1.5, 2.0, 1.5, 3.0, 3.0, 2.0),
      preference_mixture=(50.0, 20.0, 12.0, 8.0, 5.0, 1.0, 1.0, 0.01),
      num_steps=2700, preference_steps=1200, slip_rate=0.05, weight_decay=1.0)

  def __init__(self, digits_a: int = 2, digits_b: int = 2,
               max_response_len: Optional[int] = None):
    for name, d in (("digits_a", digits_a), ("digits_b", digits_b)):
      if d not in (2, 3):
        raise ValueError(f"{name} must be 2 or 3, got {d!r}.")
    self.digits_a, self.digits_b = digits_a, digits_b
    self.prompt_len = digits_a + digits_b + 2
    longest = LONGEST.get((digits_a, digits_b)) or longest_trace(digits_a, digits_b)
    if max_response_len is None:
      max_response_len = max(64, longest) if (digits_a, digits_b) == (2, 2) else longest
    self.max_response_len = max_response_len

  def default_params(self) -> problems_lib.MultiplicationParams:
    return problems_lib.default_params()

  def ood_params(self) -> problems_lib.MultiplicationParams:
    return problems_lib.ood_params()

  def sample_problems(self, key, params, batch_size: int):
    """`batch_size` problems; see `MultiplicationParams`."""
    return problems_lib.sample(key, params, batch_size, self.digits_a, self.digits_b)

  def canonical_form(self, problems):
    """i32[B, 1]: the product. Every pair of one product is one exercise: a * b
    and b * a (each long multiplication of one writes the other's partial
    products), (a/2) * (2b), halve-and-double's first line, and any other
    factorisation, whose answer is the same number."""
    return (problems.a * problems.b)[:, None]

  def beyond_training(self, problems):
    """bool[B]: products no pair of the training region has (see
    `MultiplicationParams`), the `ood` exercises: only two large factors make
    them, so their partial products and answers are larger than training's."""
    return ~problems_lib.has_pair_in_region(
        problems_lib.default_params(), problems.a * problems.b, self.digits_a, self.digits_b)

  def symmetries(self, problems):
    """{name: (problems, bool[B])}: each problem under each symmetry of its
    exercise, and where it is a problem of this env (`envs.testing` checks each
    keeps the exercise): the swap b * a (equal digit counts), halve-and-double
    (a/2) * (2b) and double-and-halve (2a) * (b/2)."""
    a, b = problems.a, problems.b
    fits = lambda x, d: (x >= 10**(d - 1)) & (x < 10**d)
    pair = problems_lib.MultiplicationProblems
    swap_ok = jnp.full(a.shape, self.digits_a == self.digits_b)
    return {
        "swap": (pair(a=b, b=a), swap_ok),
        "halve_double": (pair(a=a // 2, b=2 * b),
                         (a % 2 == 0) & fits(a // 2, self.digits_a) & fits(2 * b, self.digits_b)),
        "double_halve": (pair(a=2 * a, b=b // 2),
                         (b % 2 == 0) & fits(2 * a, self.digits_a) & fits(b // 2, self.digits_b)),
    }

  def prompt_tokens(self, problems):
    """i32[B, P]: `a * b ?` as tokens, P = digits_a + digits_b + 2."""
    return problems_lib.prompt_tokens(problems, self.digits_a, self.digits_b)

  def applicable(self, problems):
    """bool[B, S]: which strategies apply to each problem."""
    return problems_lib.applicable(problems.a, problems.b, self.digits_a, self.digits_b)

  def _demonstrate(self, key, problems, strategy_ids, slip_rate):
    """The slip: a computed value (a product, sum, difference or doubled value;
    never a number read off the problem) changes by +-10^j in one digit, keeping
    its length. In the rare case where both signs of the drawn slip would
    overflow `max_response_len` or turn a later value negative, the trace stays
    correct."""
    return _demonstrate(key, problems.a, problems.b, strategy_ids, slip_rate,
                        self.digits_a, self.digits_b, self.max_response_len)

  def _score(self, problems, responses):
    """Reward 1 iff the response ends in `# <a*b> EOS`."""
    return _score(problems.a, problems.b, responses, self.digits_a, self.digits_b)

  def question_text(self, problems) -> list:
    """`37*48?` per problem."""
    return [f"{a}*{b}?" for a, b in zip(np.asarray(problems.a).tolist(),
                                        np.asarray(problems.b).tolist())]

  def parse_problems(self, texts: Sequence[str]) -> problems_lib.MultiplicationProblems:
    """Problems from text such as `What is 37 times 48?`, `37*48`, `37 x 48`,
    `multiply 37 by 48`, `Product of 37 and 48.`, `Work out 37 * 48.`, or
    sympy's `Mul(37, 48)`.

    Raises:
      ValueError: quoting the text: "Cannot parse" if it is not a product of two
      numbers; "out of range", saying why, if a factor is negative, not whole, or
      does not have `digits_a` / `digits_b` digits.
    """
    if isinstance(texts, str):
      texts = [texts]
    pairs = parse.parse_factors(texts, self.digits_a, self.digits_b)
    return problems_lib.MultiplicationProblems(
        a=jnp.asarray([a for a, _ in pairs], jnp.int32).reshape(-1),
        b=jnp.asarray([b for _, b in pairs], jnp.int32).reshape(-1))
