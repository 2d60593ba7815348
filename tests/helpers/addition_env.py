"""A minimal third domain on the kit: two-digit addition, three strategies.

docs/adding-a-domain.md walks through this file; `envs.testing.check_env`
passes on it (tests/envs/test_envs_kit.py), and it trains with no edit to the
repository (tests/envs/test_envs_registry.py), with tests/helpers/ on PYTHONPATH:

  python -m experiments.synthetic --config=configs/grpo.py:domain=addition_env:Addition

The prompt is `37+48?`:

  split  [place_value]  30+40=70;7+8=15;70+15=85;#85     tens, units, then the total
  jump   [counting]     37+40=77;77+8=85;#85             add b's tens, then its units
  round  [counting]     37+50=87;87-2=85;#85             round b up, take the excess
                                                         back (b's units digit >= 7)
"""

import re

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envs.kit import env as env_lib
from envs.kit import grammar as grammar_lib
from envs.kit import strategy as strategy_lib
from envs.kit import symbols
from envs.kit import text
from envs.kit.strategy import Strategy
from envs.kit.trace import NO_SLIP, Slip, Trace

VOCAB = text.vocab("+-=;#?")
PLUS, QUESTION, ANSWER = VOCAB.stoi["+"], VOCAB.stoi["?"], VOCAB.stoi["#"]
T = 40  # the response budget: the longest trace (split, 99+99) has 33 tokens


@struct.dataclass
class AdditionParams:
  low: jnp.ndarray   # i32[]: both operands are uniform in [low, high]
  high: jnp.ndarray  # i32[]


@struct.dataclass
class AdditionProblems:
  a: jnp.ndarray  # i32[B]
  b: jnp.ndarray  # i32[B]


def split(t, a, b):
  tens = t.step(a - a % 10, "+", b - b % 10, a - a % 10 + b - b % 10)
  units = t.step(a % 10, "+", b % 10, a % 10 + b % 10)
  t.answer(t.step(tens, "+", units, tens + units))


def jump(t, a, b):
  partial = t.step(a, "+", b - b % 10, a + b - b % 10)
  t.answer(t.step(partial, "+", b % 10, partial + b % 10))


def round_up(t, a, b):
  up = b - b % 10 + 10
  partial = t.step(a, "+", up, a + up)
  t.answer(t.step(partial, "-", up - b, partial - (up - b)))


STEP = "NUM {} NUM = NUM ;"
STRATEGIES = (
    Strategy("split", "place_value", " ".join([STEP.format("+")] * 3) + " # NUM $", split),
    Strategy("jump", "counting", " ".join([STEP.format("+")] * 2) + " # NUM $", jump),
    Strategy("round", "counting", f"{STEP.format('+')} {STEP.format('-')} # NUM $", round_up),
)
GRAMMAR = grammar_lib.compile_grammars([s.grammar for s in STRATEGIES], VOCAB.stoi, VOCAB.eos_id)


def _applicable(a, b):
  return jnp.stack([jnp.ones_like(a, bool), jnp.ones_like(a, bool), b % 10 >= 7], -1)


def _traces(a, b, slip):
  """kinds, values i32[S, L] and result sites per strategy (static ints)."""
  traces = []
  for strategy in STRATEGIES:
    t = Trace(VOCAB.stoi, slip=slip)
    strategy.build(t, a, b)
    traces.append(t)
  length = max(map(len, traces))
  kinds, values = zip(*(t.arrays(length) for t in traces))
  return jnp.stack(kinds), jnp.stack(values), np.array([len(t.site_on) for t in traces])


SITES = _traces(jnp.int32(10), jnp.int32(10), NO_SLIP)[2]
"""Result sites of each strategy's trace: the same for every problem."""


@jax.jit
def _demonstrate(key, a, b, strategy_ids, slip_rate):
  k_slip, k_site = jax.random.split(key)
  do_slip = jax.random.uniform(k_slip, a.shape) < slip_rate
  u = jax.random.uniform(k_site, a.shape)

  def one(a, b, s, do_slip, u):
    site = jnp.where(do_slip, (u * jnp.asarray(SITES)[s]).astype(jnp.int32), -1)
    kinds, values, _ = _traces(a, b, Slip(site, jnp.int32(1), jnp.int32(0)))  # one too many
    tokens, _ = symbols.symbols_to_tokens(kinds[s], values[s], T, VOCAB.pad_id)
    return tokens

  ok = jnp.take_along_axis(_applicable(a, b), strategy_ids[:, None], 1)[:, 0]
  tokens = jax.vmap(one)(a, b, strategy_ids, do_slip, u)
  return jnp.where(ok[:, None], tokens, VOCAB.pad_id), ok


@jax.jit
def _score(a, b, responses):
  def one(a, b, tokens):
    sym = symbols.tokens_to_symbols(tokens, eos_id=VOCAB.eos_id, num_symbols=T)
    label = strategy_lib.label(GRAMMAR, STRATEGIES, sym, AdditionProblems(a, b))
    correct = (sym.final_kind == symbols.NUM) & (sym.marker == ANSWER) & (sym.final_value == a + b)
    return correct.astype(jnp.float32), label
  return jax.vmap(one)(a, b, responses)


class Addition(env_lib.KitEnv):
  """Two-digit addition with three strategies (see the module docstring)."""

  vocab = VOCAB
  strategies = STRATEGIES
  max_response_len = T
  # The base model's pretraining defaults (configs/pretrain.py reads them; any
  # polyepo.pretrain.PretrainConfig field). What is left out takes the fallbacks
  # of configs/pretrain.py: a uniform competence mixture, slip rate 0.05, 1000
  # steps. A starting point, not tuned: a preference stage that makes `jump` the
  # habit and `round` rare.
  pretrain_defaults = dict(preference_mixture=(10.0, 30.0, 1.0), preference_steps=150)

  def default_params(self):
    return AdditionParams(low=jnp.int32(10), high=jnp.int32(69))

  def ood_params(self):  # larger operands than training ever shows
    return AdditionParams(low=jnp.int32(70), high=jnp.int32(99))

  def sample_problems(self, key, params, batch_size):
    a, b = jax.random.randint(key, (2, batch_size), params.low, params.high + 1)
    return AdditionProblems(a.astype(jnp.int32), b.astype(jnp.int32))

  def canonical_form(self, problems):  # a + b and b + a are one exercise
    return jnp.stack([jnp.minimum(problems.a, problems.b),
                      jnp.maximum(problems.a, problems.b)], axis=1)

  def beyond_training(self, problems):  # the ood exercises: both operands above 69
    return jnp.minimum(problems.a, problems.b) >= 70

  def symmetries(self, problems):  # what canonical_form closes: the swap
    return {"swap": (AdditionProblems(problems.b, problems.a),
                     jnp.ones(problems.a.shape, bool))}

  def prompt_tokens(self, problems):
    n = problems.a.shape[0]
    return jnp.concatenate([symbols.int_to_tokens(problems.a, 2), jnp.full((n, 1), PLUS),
                            symbols.int_to_tokens(problems.b, 2), jnp.full((n, 1), QUESTION)],
                           axis=1).astype(jnp.int32)

  def applicable(self, problems):
    return _applicable(problems.a, problems.b)

  def _demonstrate(self, key, problems, strategy_ids, slip_rate):
    """The slip: one computed number is one too many."""
    return _demonstrate(key, problems.a, problems.b, strategy_ids, slip_rate)

  def _score(self, problems, responses):
    return _score(problems.a, problems.b, responses)

  def question_text(self, problems):
    return [f"{a}+{b}?" for a, b in zip(np.asarray(problems.a).tolist(),
                                        np.asarray(problems.b).tolist())]

  def parse_problems(self, texts):
    pairs = []
    for text in texts:
      match = re.fullmatch(r"\s*(\d\d)\s*\+\s*(\d\d)\s*\??\s*", text)
      if match is None:
        raise ValueError(f"Cannot parse {text!r}: expected two-digit 'a+b?', e.g. '37+48?'.")
      pairs.append((int(match.group(1)), int(match.group(2))))
    a, b = np.asarray(pairs, np.int32).reshape(-1, 2).T
    return AdditionProblems(jnp.asarray(a), jnp.asarray(b))
