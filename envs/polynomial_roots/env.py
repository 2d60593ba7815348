"""The `PolynomialRoots` env: jitted applicability, demonstrations and scoring."""

import functools
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from envs.kit import env as env_lib
from envs.kit import grammar as grammar_lib
from envs.kit import strategy as strategy_lib
from envs.kit import symbols
from envs.kit.trace import NO_SLIP, Slip, Trace
from envs.polynomial_roots import parse
from envs.polynomial_roots import problems as problems_lib
from envs.polynomial_roots.problems import ANSWER, COMMA, MINUS, STOI, Problem
from envs.polynomial_roots.strategies import MACROS, STRATEGIES

EOS, PAD = problems_lib.VOCAB.eos_id, problems_lib.VOCAB.pad_id


def grammar() -> grammar_lib.Grammar:
  """The compiled step grammars of the strategies (cached)."""
  return grammar_lib.compile_grammars([s.grammar for s in STRATEGIES], STOI, EOS, MACROS)


def _work(strategy: int, p: Problem, slip: Slip, max_root: int):
  """One strategy's work (everything before `#`) for one problem, as symbols.

  Returns:
    (kinds i32[L], values i32[L], answer i32[3], ok bool[]): the answer the
    work arrives at (sorted), ok the structural applicability.
  """
  t = Trace(STOI, minus_id=MINUS, slip=slip)
  answer, ok = STRATEGIES[strategy].build(t, p, max_root)
  kinds, values = t.arrays()
  return kinds, values, problems_lib.sort_live(answer, p.deg), ok


def _transcribe(answer, deg, u):
  """The answer with one root miscopied one step toward 0 (0 -> 1): never longer."""
  j = (u // 8) % deg
  answer = answer.at[j].add(jnp.where(answer[j] > 0, -1, 1))
  return problems_lib.sort_live(answer, deg)


def _with_answer(kinds, values, answer, deg):
  """Work + `#r1,r2[,r3]$`: (kinds i32[L+9], values i32[L+9], tokens i32[])."""
  t = Trace(STOI, minus_id=MINUS)
  t.op("#")
  t.num(answer[0])
  t.op(",")
  t.num(answer[1])
  t.op(",", on=deg == 3)
  t.num(answer[2], on=deg == 3)
  t.op("$")
  answer_kinds, answer_values = t.arrays()
  kinds = jnp.concatenate([kinds, answer_kinds])
  values = jnp.concatenate([values, answer_values])
  return kinds, values, jnp.sum(symbols.symbol_lengths(kinds, values))


def _max_slots(max_root):
  """Symbol slots of the longest strategy's full trace (before FILL removal)."""
  p = Problem(jnp.int32(3), jnp.zeros(4, jnp.int32), jnp.zeros(3, jnp.int32))
  return 10 + max(  # + the answer: # -N , -N , -N $
      jax.eval_shape(lambda p, i=i: _work(i, p, NO_SLIP, max_root)[0], p).shape[0]
      for i in range(len(STRATEGIES)))


def _pad_to(x, length, fill):
  return jnp.concatenate([x, jnp.full((length - x.shape[0],), fill, x.dtype)])


@functools.partial(jax.jit, static_argnums=(3, 4))
def _applicable(degree, coeffs, roots, max_root, max_len):
  """bool[B, S]: structurally applicable and the correct trace fits max_len."""
  def one(d, c, r):
    p, oks = Problem(d, c, r), []
    for i in range(len(STRATEGIES)):
      kinds, values, answer, ok = _work(i, p, NO_SLIP, max_root)
      _, _, length = _with_answer(kinds, values, answer, d)
      oks.append(ok & (length <= max_len))
    return jnp.stack(oks)
  return jax.vmap(one)(degree, coeffs, roots)


@functools.partial(jax.jit, static_argnums=(6, 7))
def _demonstrate(key, degree, coeffs, roots, strategy_ids, slip_rate, max_root, max_len):
  """Batched `PolynomialRoots.demonstrate` for static sizes."""
  num_slots = _max_slots(max_root)

  def one(d, c, r, s, do_slip, site_bits, u):
    p = Problem(d, c, r)
    all_kinds, all_values, oks = [], [], []
    for i, strategy in enumerate(STRATEGIES):
      site = site_bits % strategy.slip_sites
      ck, cv, c_ans, ok = _work(i, p, Slip(jnp.int32(-1), jnp.int32(0), u), max_root)
      sk, sv, s_ans, _ = _work(i, p, Slip(site, jnp.int32(0), u), max_root)
      _, _, c_len = _with_answer(ck, cv, c_ans, d)
      _, _, s_len = _with_answer(sk, sv, s_ans, d)
      # A slip must change the answer and keep the trace within max_len; if
      # the drawn one does not, the slip is a root miscopied into the answer.
      use_slip = do_slip & jnp.any(s_ans != r) & (s_len <= max_len)
      answer = jnp.where(use_slip, s_ans,
                         jnp.where(do_slip, _transcribe(c_ans, d, u), c_ans))
      kinds, values, _ = _with_answer(jnp.where(use_slip, sk, ck),
                                      jnp.where(use_slip, sv, cv), answer, d)
      all_kinds.append(_pad_to(kinds, num_slots, symbols.FILL))
      all_values.append(_pad_to(values, num_slots, 0))
      oks.append(ok & (c_len <= max_len))
    tokens, _ = symbols.symbols_to_tokens(
        jnp.stack(all_kinds)[s], jnp.stack(all_values)[s], max_len, PAD)
    ok = jnp.stack(oks)[s]
    return jnp.where(ok, tokens, PAD), ok

  n = degree.shape[0]
  k_slip, k_site, k_u = jax.random.split(key, 3)
  do_slip = jax.random.uniform(k_slip, (n,)) < slip_rate
  site_bits = jax.random.randint(k_site, (n,), 0, 1 << 20)
  u = jax.random.randint(k_u, (n,), 0, 1 << 20)
  return jax.vmap(one)(degree, coeffs, roots, strategy_ids, do_slip, site_bits, u)


def _correct(sym: symbols.Symbols, d, r):
  """bool[]: the symbols after the last `#` are `N , N [, N] $` with the roots."""
  kinds = sym.kinds
  slot = jnp.arange(kinds.shape[0])
  prev = jnp.concatenate([jnp.full((1,), symbols.FILL), kinds[:-1]])
  nxt = jnp.concatenate([kinds[1:], jnp.full((1,), symbols.FILL)])
  is_num = kinds == symbols.NUM
  signed = symbols.signed_values(sym, MINUS)
  eos_slot = sym.count - 1
  ans_slot = jnp.max(jnp.where((kinds == ANSWER) & (slot < eos_slot), slot, -1))
  region = (slot > ans_slot) & (slot < eos_slot)
  well_formed = (is_num
                 | ((kinds == MINUS) & (nxt == symbols.NUM)
                    & ((prev == ANSWER) | (prev == COMMA)))
                 | ((kinds == COMMA) & (prev == symbols.NUM)
                    & ((nxt == symbols.NUM) | (nxt == MINUS))))
  count = jnp.sum(region & is_num)
  index = jnp.where(region & is_num, jnp.cumsum(region & is_num) - 1, 3)
  answer = jnp.zeros((3,), jnp.int32).at[index].set(signed, mode="drop")
  live = jnp.arange(3) < d
  return (sym.has_eos & (ans_slot >= 0) & jnp.all(~region | well_formed)
          & (count == d) & jnp.all(~live | (answer == r)))


@jax.jit
def _score(degree, coeffs, roots, responses):
  """Batched `PolynomialRoots.score`."""
  dfa = grammar()

  def one(d, c, r, tokens):
    sym = symbols.tokens_to_symbols(tokens, eos_id=EOS, num_symbols=tokens.shape[0])
    label = strategy_lib.label(dfa, STRATEGIES, sym, Problem(d, c, r))
    return _correct(sym, d, r).astype(jnp.float32), label

  return jax.vmap(one)(degree, coeffs, roots, responses)


def _num_width(bound):
  return len(str(int(bound)))


class PolynomialRoots(env_lib.KitEnv):
  """Integer roots of polynomials with exact rewards and strategy labels.

  See `envs.polynomial_roots` for the strategies, grammars and answer format.

  Args:
    max_root: static bound on |root| (sizes the prompt and the search strategies'
      candidate lists); `params.root_range` must not exceed it.
    max_lead: static bound on the leading coefficient (`params.lead_range`).
    max_response_len: T, the response budget in tokens (EOS included).
  """

  vocab = problems_lib.VOCAB
  strategies = STRATEGIES
  render_separator = ":  "

  # The base model's pretraining defaults (configs/pretrain.py; any field of
  # polyepo.pretrain.PretrainConfig). Competence mixture: uniform. Preference
  # mixture: one dominant strategy, a middle and a tail; as shares of the corpus
  # once each problem is restricted to the strategies that apply (training
  # problems): factor 58%, quadratic_formula 16%, integer_scan 13%,
  # rational_root 7.2%, vieta_pairs 4.0%, complete_square 1.6%, grouping 0.48%,
  # depressed_cubic 0.13%. Held out by exercise (roots in [-6, 6]), about 410
  # root multisets were in training, and the model first recalls the steps their
  # traces write, and learns to work out new ones, and so to carry the
  # strategies out on unseen exercises, as it sees more demonstrations: weight
  # decay 1.0 and 3,000 competence steps met the competence target on the
  # exercise splits, 1,000 and 2,000 did not (forced accuracy by weight decay
  # and by length: docs/base-models.md). Held out by class (roots in [-12, 12],
  # 746 training classes) 3,000, 6,000 and 12,000 steps miss it: more
  # demonstrations help, slowly. Fewer slips meet it: with a slip in one
  # demonstration in ten the model learnt to slip as well (docs/base-models.md).
  # 600 preference steps bring the rarest strategy under its target.
  pretrain_defaults = dict(
      mixture=(1.0,) * 8,
      preference_mixture=(45.0, 20.0, 4.0, 6.0, 8.0, 15.0, 3.0, 1.0),
      num_steps=12000, preference_steps=600, slip_rate=0.02, weight_decay=1.0)

  def __init__(self, max_root: int = 15, max_lead: int = 5, max_response_len: int = 64):
    if not 1 <= max_root <= 19:
      raise ValueError(f"max_root must be in 1..19, got {max_root!r}.")
    if not 1 <= max_lead <= 9:
      raise ValueError(f"max_lead must be in 1..9, got {max_lead!r}.")
    self.max_root, self.max_lead = max_root, max_lead
    self.max_response_len = int(max_response_len)
    a, r = max_lead, max_root
    # Prompt: `c3x³+c2x²+c1x+c0=0` with signs on all but the leading coefficient.
    self.prompt_len = (_num_width(a) + 3 + (1 + _num_width(3 * a * r)) + 3
                       + (1 + _num_width(3 * a * r * r)) + 2
                       + (1 + _num_width(a * r**3)) + 2)
    # The longest factor trace must fit, so every problem has a strategy.
    factor_len = (_num_width(a) + 3 * (5 + _num_width(r)) + 1
                  + 3 * (1 + _num_width(r)) + 2 + 1)
    if self.max_response_len < factor_len:
      raise ValueError(f"max_response_len must be >= {factor_len} for these bounds, "
                       f"got {self.max_response_len}.")

  def default_params(self) -> problems_lib.PolynomialParams:
    return problems_lib.default_params(self.max_root, self.max_lead)

  def ood_params(self) -> problems_lib.PolynomialParams:
    return problems_lib.ood_params(self.max_root, self.max_lead)

  def sample_problems(self, key, params, batch_size: int) -> problems_lib.PolynomialProblems:
    """`batch_size` problems drawn as described in `PolynomialParams`."""
    params = jax.tree_util.tree_map(jnp.asarray, params)
    lead_range = jnp.clip(params.lead_range, 1, self.max_lead)
    params = params.replace(root_range=jnp.clip(params.root_range, 0, self.max_root),
                            min_lead=jnp.clip(params.min_lead, 1, lead_range),
                            lead_range=lead_range)
    degree, coeffs, roots = problems_lib.sample(key, params, batch_size)
    return problems_lib.PolynomialProblems(degree=degree, coeffs=coeffs, roots=roots)

  def canonical_form(self, problems):
    """i32[B, 4]: the exercise (`problems.exercise` of this package), the degree and the root
    multiset, whatever the leading coefficient (scaling a polynomial does not
    change how its roots are found), a cubic with a zero root as its quadratic
    (x * q(x) is solved by solving q) and p(-x) with p (every strategy's trace
    of one is the other's with signs flipped)."""
    return problems_lib.exercise(problems.degree, problems.roots)

  def beyond_training(self, problems):
    """bool[B]: a root beyond `TRAIN_MAX_ROOT`, the `ood` exercises."""
    return jnp.any(jnp.abs(problems.roots) > problems_lib.TRAIN_MAX_ROOT, axis=-1)

  def symmetries(self, problems):
    """{name: (problems, bool[B])}: each problem under each symmetry of its
    exercise, and where it is a problem of this env (`envs.testing` checks each
    keeps the exercise): another leading coefficient (`scale`), p(-x)
    (`mirror`), and x * q(x) for a quadratic q (`zero_root`)."""
    degree, roots = problems.degree, problems.roots
    lead = jnp.take_along_axis(problems.coeffs, degree[:, None], axis=1)[:, 0]
    make = lambda d, r, a: problems_lib.PolynomialProblems(
        degree=d, coeffs=problems_lib.coeffs_from_roots(d, r, a), roots=r)
    mirror = problems_lib.sort_live(-roots, degree)
    cubic = jnp.full_like(degree, 3)
    with_zero = problems_lib.sort_live(roots.at[:, 2].set(0), cubic)
    return {
        "scale": (make(degree, roots, lead % self.max_lead + 1),
                  jnp.full(degree.shape, self.max_lead > 1)),
        "mirror": (make(degree, mirror, lead), jnp.ones(degree.shape, bool)),
        "zero_root": (make(jnp.where(degree == 2, 3, degree),
                           jnp.where((degree == 2)[:, None], with_zero, roots), lead),
                      degree == 2),
    }

  def prompt_tokens(self, problems):
    """i32[B, P]: `c3x³+c2x²+c1x+c0=0` (cubics) or `c2x²+c1x+c0=0`, left-padded."""
    return problems_lib.prompts(problems.degree, problems.coeffs, self.prompt_len)

  def applicable(self, problems):
    """bool[B, S]: the strategy applies and its correct trace fits the budget."""
    return _applicable(problems.degree, problems.coeffs, problems.roots,
                       self.max_root, self.max_response_len)

  def _demonstrate(self, key, problems, strategy_ids, slip_rate):
    """The slip falls on one of the strategy's named sites (a sign error in a
    factor, in -b, in S or in the shift; a square root, D or e off by one; 2a
    written as a; a non-root's test value taken as 0; a wrong pair sum taken as
    S...). Where the drawn slip leaves the answer right (e.g. a sign error on 0)
    or would overflow the budget, the slip is a root miscopied into the answer
    instead (one step toward 0, never longer)."""
    return _demonstrate(key, problems.degree, problems.coeffs, problems.roots,
                        strategy_ids, slip_rate, self.max_root, self.max_response_len)

  def _score(self, problems, responses):
    """Reward 1 iff the response ends in `#r1,r2[,r3]$` with the sorted roots."""
    return _score(problems.degree, problems.coeffs, problems.roots, responses)

  def question_text(self, problems) -> list:
    """`2x^2 - 10x + 12 = 0` per problem."""
    return [parse.poly_text(c[:d + 1]) for d, c in
            zip(np.asarray(problems.degree).tolist(), np.asarray(problems.coeffs))]

  def parse_problems(self, texts: Sequence[str]) -> problems_lib.PolynomialProblems:
    """Problems from questions typed as text.

    Accepts e.g. `Solve 2*x**2 - 10*x + 12 = 0 for x.`, `Find the roots of
    x**3 - 6*x**2 + 11*x - 6.`, `x^2 - 5x + 6 = 0`, `x² = 5x - 6`,
    `Eq(x**2 - 5*x + 6, 0)`, `solve(x**2 - 4, x)`, and mathematics_dataset's
    `Let 2*s**2 - 10*s + 12 = 0. Calculate s.`: a polynomial in one variable
    (any letter) with integer coefficients (terms on either side of `=`, `**`
    or `^`, `*` optional); the sign is normalised so the leading coefficient
    is positive.

    Raises:
      ValueError: quoting the text and saying why: it cannot be parsed (no
      polynomial, more than one variable, non-integer coefficients), its degree
      is not 2 or 3, a root is not an integer, or a root / the leading
      coefficient exceeds `max_root` / `max_lead`.
    """
    if isinstance(texts, str):
      texts = [texts]
    rows = [parse.parse_one(t, self.max_root, self.max_lead) for t in texts]
    return problems_lib.PolynomialProblems(
        degree=jnp.asarray([d for d, _, _ in rows], jnp.int32).reshape(-1),
        coeffs=jnp.asarray([c for _, c, _ in rows], jnp.int32).reshape(-1, 4),
        roots=jnp.asarray([r for _, _, r in rows], jnp.int32).reshape(-1, 3))
