"""Tests for the environments kit and the conformance suite `envs.testing`."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import addition_env
import envs
from envs import testing
from envs.kit import grammar as grammar_lib
from envs.kit import strategy as strategy_lib
from envs.kit import symbols
from envs.kit import text
from envs.kit.trace import Slip, Trace
from polyepo.env_api import DEGENERATE

VOCAB = text.vocab("+-*=;#")
STOI, EOS = VOCAB.stoi, VOCAB.eos_id
GRAMMARS = (
    "N * N = N ; # N $",
    "N * N { ; N * N }* = N ; # N $",
    "N + N = N ; { N + N = N ; }? # N $",
    "N * N = N ; # N $",  # the same as the first: both accept
)
MACROS = {"N": "{ - }? NUM"}


def _regex(grammar):
  """Brute force: the grammar as a Python regex over one character per symbol."""
  out = []
  for word in " ".join(MACROS.get(w, w) for w in grammar.split()).split():
    out.append({"{": "(?:", "}*": ")*", "}+": ")+", "}?": ")?", "NUM": "N"}.get(
        word, re.escape(chr(0x100 + STOI[word])) if word in STOI else word))
  return re.compile("".join(out))


def _as_text(kinds):
  return "".join("N" if k == symbols.NUM else chr(0x100 + k) for k in kinds
                 if k != symbols.FILL)


def _random_words(rng, count, length):
  """Symbol sequences ending in EOS, from the alphabet the grammars use."""
  alphabet = [symbols.NUM] * 4 + [STOI[c] for c in "+-*=;#"]
  words = []
  for _ in range(count):
    n = rng.integers(1, length)
    words.append([alphabet[i] for i in rng.integers(0, len(alphabet), n)] + [EOS])
  return words


def _words_from(grammar, rng):
  """A word the grammar accepts (optional groups taken at random)."""
  words = grammar.replace("{ - }? NUM", "NUM").split()
  out, stack = [], []
  for w in words:
    if w == "{":
      stack.append(len(out))
    elif w.startswith("}"):
      start = stack.pop()
      group = out[start:]
      if rng.random() < 0.5:
        del out[start:]
      elif w == "}*" or w == "}+":
        out += group * int(rng.integers(0, 3))
    else:
      out.append(symbols.NUM if w in ("N", "NUM") else STOI[w])
  return out


def test_dfa_matches_regex_brute_force():
  dfa = grammar_lib.compile_grammars(GRAMMARS, STOI, EOS, MACROS)
  rng = np.random.default_rng(0)
  words = _random_words(rng, 300, 12)
  words += [_words_from(g, rng) for g in GRAMMARS for _ in range(40)]
  # Near misses: one symbol of an accepted word changed.
  for w in list(words[300:]):
    w = list(w)
    w[rng.integers(0, len(w))] = [symbols.NUM, STOI["+"], STOI[";"]][rng.integers(0, 3)]
    words.append(w)
  width = max(map(len, words)) + 2
  regexes = [_regex(g) for g in GRAMMARS]
  kinds = np.full((len(words), width), symbols.FILL, np.int32)
  for i, w in enumerate(words):
    kinds[i, :len(w)] = w
  match = jax.jit(jax.vmap(lambda k: grammar_lib.match(dfa, symbols.Symbols(
      k, jnp.zeros_like(k), None, None, None, None, None))))
  got = np.asarray(match(jnp.asarray(kinds)))
  want = np.array([[r.fullmatch(_as_text(w)) is not None for r in regexes] for w in words])
  for i, w in enumerate(words):
    np.testing.assert_array_equal(got[i], want[i], err_msg=_as_text(w))
  assert want.any(0).all() and (~want).any(0).all()


def test_max_symbols_and_overlap():
  bounded = grammar_lib.compile_grammars(["NUM { ; NUM }? { ; NUM }? $"], STOI, EOS)
  assert bounded.max_symbols == 6
  assert grammar_lib.compile_grammars(["NUM { ; NUM }* $"], STOI, EOS).max_symbols is None
  dfa = grammar_lib.compile_grammars(GRAMMARS, STOI, EOS, MACROS)
  assert dfa.accepts[:, 0].any() and (dfa.accepts[:, 0] == dfa.accepts[:, 3]).all()
  never = grammar_lib.compile_grammars(["NUM $", None], STOI, EOS)
  assert never.accepts[:, 0].any() and not never.accepts[:, 1].any()


@pytest.mark.parametrize("grammar, message", [
    ("NUM ? $", "'?'"),
    ("{ NUM $", "not closed"),
    ("NUM }? $", "closes no group"),
    ("{ NUM } $", "must close"),
    ("NUM ;", "must end with the EOS"),
    ("7 $", "'7'"),
])
def test_grammar_errors_quote_the_grammar(grammar, message):
  with pytest.raises(ValueError, match=re.escape(message)) as err:
    grammar_lib.compile_grammars([grammar], STOI, EOS)
  assert repr(grammar) in str(err.value)


def test_trace_slots_signs_and_slips():
  t = Trace(STOI, minus_id=STOI["-"], slip=Slip(jnp.int32(1), jnp.int32(5), jnp.int32(0)))
  t.num(-3)
  t.op("*")
  a = t.result(4)            # site 0: no slip
  t.op(";", on=False)        # switched off: FILL
  b = t.result(10)           # site 1: slips by +5
  t.block((";", 0, "=", 1), jnp.array([[1, -2], [3, 4]]), jnp.array([True, False]))
  t.op("$")
  kinds, values = t.arrays(length=len(t) + 2)
  tokens, fits = symbols.symbols_to_tokens(kinds, values, 16, VOCAB.pad_id)
  assert int(a) == 4 and int(b) == 15 and bool(fits)
  assert text.tokens_to_text(tokens, VOCAB.itos, EOS, VOCAB.pad_id) == "-3*415;1=-2"
  assert [bool(x) for x in t.site_on] == [True, True]
  assert [int(v) for v in t.site_values] == [4, 10]
  assert t.slips(1) and not t.slips(0)


def test_signed_numbers_hand_worked():
  tokens = jnp.asarray([STOI["-"], 1, 2, STOI["+"], 7, STOI["-"], 0, EOS, 3])
  sym = symbols.tokens_to_symbols(tokens, eos_id=EOS, num_symbols=9)
  np.testing.assert_array_equal(symbols.signed_numbers(sym, STOI["-"], 4), [-12, 7, 0, 0])


def test_label_takes_the_first_strategy_whose_check_holds():
  strategies = [strategy_lib.Strategy(str(i), "f", g, None) for i, g in enumerate(GRAMMARS)]
  strategies[0] = strategies[0]._replace(check=lambda sym, p: sym.values[0] == p)
  dfa = grammar_lib.compile_grammars(GRAMMARS, STOI, EOS, MACROS)
  tokens = jnp.asarray([2, STOI["*"], 3, STOI["="], 6, STOI[";"], STOI["#"], 6, EOS])
  sym = symbols.tokens_to_symbols(tokens, eos_id=EOS, num_symbols=9)
  assert int(strategy_lib.label(dfa, strategies, sym, 2)) == 0
  # Grammar 1 (zero repetitions) and 3 (the same as 0, no check) accept too: 1 is first.
  assert int(strategy_lib.label(dfa, strategies, sym, 5)) == 1
  sym = symbols.tokens_to_symbols(tokens.at[4].set(STOI["+"]), eos_id=EOS, num_symbols=9)
  assert int(strategy_lib.label(dfa, strategies, sym, 2)) == DEGENERATE


def test_vocab_refuses_repeated_tokens():
  assert VOCAB.itos[:10] == tuple("0123456789") and VOCAB.itos[-2:] == ("$", "_")
  with pytest.raises(ValueError, match="repeat"):
    text.vocab("+-+")


@pytest.mark.slow
def test_the_readme_domain_passes_the_conformance_suite():
  env = addition_env.Addition()
  testing.check_env(env)
  testing.check_env(env, env.ood_params())


@pytest.mark.slow
@pytest.mark.parametrize("name", envs.NAMES)
def test_domains_pass_the_conformance_suite(name):
  env, params = envs.make(name)
  testing.check_env(env, params, num_problems=48)


@pytest.mark.slow  # ~1 minute per domain on 2 cores
@pytest.mark.parametrize("name", envs.NAMES)
def test_domains_pass_the_conformance_suite_out_of_distribution(name):
  env, _ = envs.make(name)
  testing.check_env(env, env.ood_params())


class _RewardsTheTrace(addition_env.Addition):
  """Broken: rewards a response whose answer is its own last step's result."""

  def score(self, problems, responses):
    reward, label = super().score(problems, responses)
    return jnp.where(label >= 0, 1.0, reward), label


class _SlipsLoseTheirLabel(addition_env.Addition):
  """Broken: a wrong answer is labelled DEGENERATE."""

  def score(self, problems, responses):
    reward, label = super().score(problems, responses)
    return reward, jnp.where(reward > 0, label, DEGENERATE)


class _AcceptsTruncation(addition_env.Addition):
  """Broken: a response cut before EOS keeps its reward."""

  def score(self, problems, responses):
    full = jnp.where(responses == self.pad_id, self.eos_id, responses)
    return super().score(problems, full)


class _ParseSaysNothing(addition_env.Addition):
  """Broken: the parse error does not quote the text."""

  def parse_problems(self, texts):
    try:
      return super().parse_problems(texts)
    except ValueError:
      raise ValueError("bad question") from None


class _FormOfTheBatch(addition_env.Addition):
  """Broken: a problem's form depends on the other problems of its batch."""

  def canonical_form(self, problems):
    return super().canonical_form(problems) - problems.a[0]


class _FormOrdersThePair(addition_env.Addition):
  """Broken: a + b and b + a are two exercises, though its symmetries say one."""

  def canonical_form(self, problems):
    return jnp.stack([problems.a, problems.b], axis=1)


@pytest.mark.parametrize("broken, check", [
    (_RewardsTheTrace, "reward_from_problem"),
    (_FormOfTheBatch, "canonical_form"),
    (_FormOrdersThePair, "symmetries"),
    (_SlipsLoseTheirLabel, "slips"),
    (_AcceptsTruncation, "truncation"),
    (_ParseSaysNothing, "parse_errors"),
])
def test_conformance_suite_catches_broken_envs(broken, check):
  with pytest.raises(AssertionError, match=f"{check}: "):
    testing.check_env(broken(), only=[check])
  testing.check_env(addition_env.Addition(), only=[check])


class _OftenSixty(addition_env.Addition):
  """Guessable: every `every`-th problem is a + (60 - a), so `#60` is often right."""

  every = 2

  def sample_problems(self, key, params, batch_size):
    p = super().sample_problems(key, params, batch_size)
    a = jnp.clip(p.a, 10, 50)  # 60 - a stays two-digit
    forced = jnp.arange(batch_size) % self.every == 0
    return addition_env.AdditionProblems(jnp.where(forced, a, p.a), jnp.where(forced, 60 - a, p.b))


def test_a_guessable_answer_fails_the_conformance_suite():
  """Half the 512 problems sum to 60; of the other half, uniform pairs in
  [10, 69], 41 / 3600 = 1.1% do too: `#60` alone earns 50% + ~0.6%."""
  with pytest.raises(AssertionError, match="guessing: one answer alone earns") as err:
    testing.check_env(_OftenSixty(), only=["guessing"])
  rate = float(re.search(r"earns ([0-9.]+)% of the reward on 512 problems", str(err.value))[1])
  assert 50.0 <= rate <= 53.0, rate
  assert "#60" in str(err.value)


def test_an_answer_under_the_threshold_passes():
  """One problem in 16 sums to 60: 6.25% + 15/16 * 1.1% = 7.3%, under 10%."""
  env = _OftenSixty()
  env.every = 16
  testing.check_env(env, only=["guessing"])
  # The most common sum, 79, is 60 of the 3600 pairs: 1.7%.
  testing.check_env(addition_env.Addition(), only=["guessing"])


def test_unknown_check_names_the_choices():
  with pytest.raises(ValueError, match="labels_recovered"):
    testing.check_env(addition_env.Addition(), only=["spelling"])
