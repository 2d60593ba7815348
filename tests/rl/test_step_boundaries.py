"""`Env.step_boundaries` of the kit's domains, against hand-written segmentations and the
step grammars (envs/*/strategies.py)."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs.multiplication import problems as mult_problems
from envs.multiplication.strategies import STRATEGIES as MULT
from envs.polynomial_roots.strategies import STRATEGIES as ROOTS


def _segmented(env, tokens, boundaries):
  return "".join(("|" if b else "") + env.itos[t]
                 for t, b in zip(np.asarray(tokens), np.asarray(boundaries)) if t != env.pad_id)


def test_multiplication_steps_by_hand():
  """37 * 48, one demonstration per strategy: `|` where a step starts."""
  env, _ = envs.make("multiplication")
  problems = mult_problems.MultiplicationProblems(jnp.full(8, 37), jnp.full(8, 48))
  tokens, ok = env.demonstrate(jax.random.key(0), problems, jnp.arange(8))
  got = {env.strategy_names[s]: _segmented(env, tokens[s], env.step_boundaries(tokens)[s])
         for s in range(8) if ok[s]}
  assert got == {
      "long_by_b": "37*8=296;|37*40=1480;|296+1480=1776;|#1776$",
      "long_by_a": "48*7=336;|48*30=1440;|336+1440=1776;|#1776$",
      "place_value": "30*40=1200;|30*8=240;|7*40=280;|7*8=56;|1200+240+280+56=1776;|#1776$",
      "round_adjust": "37*50=1850;|37*2=74;|1850-74=1776;|#1776$",
      "halve_double": "24*74;|12*148;|6*296;|3*592=1776;|#1776$",
      "factor_out": "6*37=222;|222*8=1776;|#1776$",
      "karatsuba": "3*4=12;|7*8=56;|10*12=120;|120-12-56=52;|1200+520+56=1776;|#1776$",
  }


def _demonstrations(domain, num_problems=32):
  env, params = envs.make(domain)
  problems = env.sample_problems(jax.random.key(1), params, num_problems)
  for s in range(len(env.strategy_names)):
    tokens, ok = env.demonstrate(jax.random.key(2), problems, jnp.full(num_problems, s),
                                 slip_rate=0.5)
    yield env, s, np.asarray(tokens)[np.asarray(ok)], np.asarray(
        env.step_boundaries(tokens))[np.asarray(ok)]


def _grammar_steps(grammar: str):
  """Steps a grammar without repeated groups writes: one per `;`, plus the answer
  step unless `#` directly follows a `;`; None for a grammar with groups."""
  if "{" in grammar:
    return None
  words = grammar.split()
  return words.count(";") + int(words[words.index("#") - 1] != ";")


@pytest.mark.slow
@pytest.mark.parametrize("domain", envs.NAMES)
def test_boundaries_follow_the_grammars(domain):
  """On demonstrations of every strategy (slips included): as many boundaries as
  the grammar has steps (fixed grammars), each one right after `;` or at `#`,
  none at 0 or after EOS, every response has one before its answer."""
  strategies = {"multiplication": MULT, "polynomial_roots": ROOTS}[domain]
  checked = 0
  for env, s, tokens, boundaries in _demonstrations(domain):
    grammar = strategies[s].grammar
    grammar = grammar(2, 2) if callable(grammar) else grammar
    steps = _grammar_steps(grammar)
    stoi = env.vocab.stoi
    for row, bound in zip(tokens, boundaries):
      eos = int(np.argmax(row == env.eos_id))
      assert not bound[0] and not bound[eos:].any()
      where = np.flatnonzero(bound)
      assert len(where) >= 1 and row[where[-1]] == stoi["#"]
      for t in where:
        assert row[t - 1] == stoi[";"] or row[t] == stoi["#"]
      starts = [t for t in range(1, eos) if row[t - 1] == stoi[";"] or row[t] == stoi["#"]]
      np.testing.assert_array_equal(where, starts)
      if steps is not None:
        assert len(where) == steps, (env.strategy_names[s], grammar, row)
      checked += 1
  assert checked > 50


def test_boundaries_of_cut_and_padded_responses():
  """A response cut off before EOS has boundaries up to its end; nothing counts past
  the first EOS."""
  env, _ = envs.make("multiplication")
  text = "37*8=296;37*40=1480;"
  row = np.full(24, env.pad_id)
  row[:len(text)] = env.text_to_tokens(text)
  cut = env.step_boundaries(jnp.asarray(row[None]))[0]
  np.testing.assert_array_equal(np.flatnonzero(cut), [9, 20])
  row[len(text)] = env.eos_id
  row[len(text) + 1:len(text) + 3] = env.text_to_tokens(";3")
  ended = env.step_boundaries(jnp.asarray(row[None]))[0]
  np.testing.assert_array_equal(np.flatnonzero(ended), [9])
