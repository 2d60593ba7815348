"""The contract between the library and an environment.

This module is deliberately tiny and imports nothing heavy: the domains in `envs/`
may import it (and only it) from `polyepo`; `envs.datasets` also uses
`polyepo.splits` to hold its problems out of training. Training, pretraining and evaluation accept any object
that satisfies `Env`; `envs.testing.check_env` checks that one does, and
`envs.kit.env.KitEnv` implements the methods every kit domain shares.
"""

from typing import Any, Protocol, Sequence, Tuple

DEGENERATE = -1
"""Strategy label of a response that follows no strategy (or shows no work).

Degenerate responses still earn their reward but add nothing to diversity; all of
them count as one cluster wherever clusters are compared (as the LM judge's
"degenerate" cluster does in Hasan Orney et al., *Poly-EPO: Training Exploratory
Reasoning Models*, arXiv:2604.17654).
"""

Problems = Any  # A pytree of arrays with a leading batch axis B.
Params = Any  # A pytree of numeric environment knobs (vmappable).


class Env(Protocol):
  """A synthetic reasoning domain with exact rewards and strategy labels.

  The object holds no state: everything that fixes a shape is a constructor
  argument, numeric difficulty knobs live in `params`. Every method takes and
  returns arrays with a leading batch axis B unless it says otherwise; the
  array methods are `jit`- and `vmap`-able.

  Attributes:
    strategy_names: the S strategy labels' names; label s is strategy_names[s].
    strategy_families: the family (macro label) of each strategy, S strings;
      strategies sharing an idea share a family.
    vocab_size: V, the token vocabulary size.
    pad_id: the token after a response's end.
    eos_id: the token that ends a response.
    max_response_len: T, the response budget in tokens (EOS included).
    hold_out: whether the `validation` and `test` problems are held out of
      training by a hash of each problem's exercise (`canonical_form`,
      `polyepo.splits`); False only for a problem space too small to split
      (such an env need not define `canonical_form`).
    has_step_boundaries: whether the env implements `step_boundaries`
      (estimators that grow vines from reasoning steps need it).

  Optional, on the class: `pretrain_defaults`, a dict of
  `polyepo.pretrain.PretrainConfig` fields, the domain's pretraining values
  (configs/pretrain.py reads them; what is left out falls back there).
  """

  strategy_names: Tuple[str, ...]
  strategy_families: Tuple[str, ...]
  vocab_size: int
  pad_id: int
  eos_id: int
  max_response_len: int
  hold_out: bool
  has_step_boundaries: bool

  def default_params(self) -> Params:
    """The training distribution's params (also the `validation` and `test`
    splits', whose problems `polyepo.splits` holds out of training)."""

  def ood_params(self) -> Params:
    """The shifted distribution of the `ood` split (a shift the domain names,
    e.g. larger operands); `polyepo.splits` keeps its draws of the `ood`
    exercises only, other exercises than `test`'s and training's."""

  def sample_problems(self, key, params: Params, batch_size: int) -> Problems:
    """Draws `batch_size` problems; a pytree with leading axis B."""

  def canonical_form(self, problems: Problems):
    """A pytree with leading axis B, equal for two problems iff they are one exercise.

    An exercise is a class of problems a model could answer from one another,
    closed under every symmetry a strategy can exploit, and what those are is
    the domain's to say (multiplication: the product, since b * a, (a/2) * (2b)
    and every pair of one product share what a strategy writes or its answer;
    polynomial roots: the root multiset, every leading coefficient together, a
    cubic with a zero root with its quadratic, p(-x) with p). `polyepo.splits`
    hashes it, so every problem of an exercise falls in one split and an
    evaluation problem's exercise is never trained on (`envs.testing.check_env`
    checks it, and that the symmetries an env lists, `symmetries`, keep it).

    Optional, beside it: `symmetries(problems)`, {name: (problems, bool[B])},
    each problem under each symmetry and where that is a problem of the env;
    `beyond_training(problems)`, bool[B], the exercises of `ood` (a shift the
    domain names), which `polyepo.splits` then keeps out of every other split.
    """

  def prompt_tokens(self, problems: Problems):
    """i32[B, P]: the prompt of each problem."""

  def applicable(self, problems: Problems):
    """bool[B, S]: which strategies apply to each problem (at least one each)."""

  def demonstrate(self, key, problems: Problems, strategy_ids, slip_rate: float = 0.0):
    """(i32[B, T], bool[B]): a full trace of each strategy, and whether it applies.

    strategy_ids is i32[B]; with probability `slip_rate` a trace carries one
    slip that keeps its label and makes its answer wrong. Where the strategy
    does not apply the trace is all PAD.
    """

  def score(self, problems: Problems, responses):
    """(f32[B], i32[B]): reward (1 iff exactly right) and strategy label.

    responses is i32[B, T] (anything after the first EOS is ignored); the
    reward comes from the problem, never from comparing the work to a trace.
    """

  def step_boundaries(self, responses):
    """bool[B, T]: True at the token positions where a new reasoning step starts.

    Optional, declared by `has_step_boundaries`: only Poly-PPO's vine sampling
    (`polyepo.vines`) needs it, and training refuses it for an env that
    declares none. Position 0 (the
    prompt, always a rollout state) and positions at or after the first EOS
    are False; a boundary t names the state "prompt + response[:t]" that a
    vine continues. The kit's domains start a step after each `;` and at the
    answer marker `#` (`envs.kit.env.KitEnv.step_boundaries`).
    """

  def answers(self, problems: Problems, responses):
    """i32[B]: an id of each response's final answer, -1 for none.

    Responses with equal ids give the same answer; evaluation uses it for
    majority-vote accuracy and the majority-vote objective.
    """

  def question_text(self, problems: Problems) -> Sequence[str]:
    """The question of each problem as text; `parse_problems` reads it back."""

  def response_text(self, responses) -> Sequence[str]:
    """Each response as text up to EOS; `text_to_tokens` reads it back."""

  def render(self, problems: Problems, responses) -> Sequence[str]:
    """Human-readable question and response text of each (problem, response)."""

  def text_to_tokens(self, text: str):
    """i32[n]: the tokens of one `response_text` (without EOS)."""

  def parse_problems(self, texts: Sequence[str]) -> Problems:
    """Problems from questions typed as plain text; ValueError quoting a bad one."""
