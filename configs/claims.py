r"""The preregistered claims: what the final comparison judges, fixed before its runs.

Registered on 2026-11-28, before any run on the exercise splits (`polyepo.splits`,
`SCHEME = "exercise"`); the tuning and final sweeps on those splits come after. Each
claim names its rows, split, metric (with k), relation and margin, and the papers'
wording it tests (`source`; "Set RL note" there is Ibn Hamid et al., *Set Reinforcement
Learning: Principles and Approaches*, docs/method.md#references); the papers' claims
come first, where they have one.
`experiments.analysis.claims` judges them, `python -m experiments.report` prints every verdict
with its interval, and summary.json records each claim's definition beside its
verdict.

**Changing a claim.** A claim may be changed freely until a result has judged it.
After that, a change keeps the claim's `id` and adds a `Change` naming the commit
of the result that was seen and the definition before it; the report marks the
claim, and `tests/experiments/analysis/test_claims.py` fails for a claim whose definition differs from
the one recorded in `results/final/summary.json` without such a `Change`.

**The rule** (`RULE`): every claim of a domain is judged on the intervals it rests
on, and all the intervals of a domain's claims are simultaneous (Bonferroni): with T
intervals in the domain's family, each is the paired bootstrap interval of a − b at
level 1 − α/T (`alpha` = 0.05), so all T cover at once with probability at least 95%,
and any verdict built from them (a strategy's two conditions, a λ's either-or) is
wrong with probability at most 5%. T counts every interval the registry defines for
the domain, including those of claims whose rows did not run, so a missing row never
eases the others. "a > b + m" holds iff the whole interval lies above m, "a ≥ b + m"
iff it lies at or above m, "a < b + m" iff below m, "within m" iff inside [−m, m];
fewer than `min_seeds` seeds on either side is not judged, and a row trained for
other steps than `steps` is not judged either.

**Tuning** (`TUNING`), fixed before the tuning runs: every algorithm gets the same
learning-rate grid and seeds, the rest of its config fixed at its defaults; the
choice is the setting with the best final `validation` pass@1 (mean over seeds),
distinct correct shown beside it; a choice at the grid's edge extends the grid on
that side, one step at a time, until the choice is inside it, and each algorithm's
number of settings is reported.
"""

import dataclasses
from typing import Any, Dict, Optional, Tuple


@dataclasses.dataclass(frozen=True)
class Change:
  """A claim changed after a result judged it.

  Attributes:
    seen_at: the commit of the result (results/final) that was seen first.
    previous: the definition before the change (`Claim.definition()`).
    why: the reason, in one sentence.
  """
  seen_at: str
  previous: Dict[str, Any]
  why: str


@dataclasses.dataclass(frozen=True)
class Claim:
  """One preregistered claim, judged on each domain.

  Attributes:
    id: a stable name; summary.json and the changes refer to it.
    statement: the claim in words, as the report prints it.
    source: the papers' words it tests (or this project's, marked so).
    kind: "compare" (a relation b + margin on metric), "amplified" (every
      strategy under `RULE["rare_share"]` of the base model's test samples
      reaches `amplification` x its base share under a and not under b; one
      verdict per strategy), "lambda" (at every λ of `RULE["lambdas"]`, a is
      ahead of reward shaping on pass@1 or on distinct correct).
    a, b: row labels (`experiments.analysis.algorithms`).
    split: "validation", "test" or "ood".
    metric: "pass@k", "distinct_correct", ... (`experiments.analysis.records.per_problem`).
    relation: ">", ">=", "<" or "within" (`experiments.analysis.stats.RELATIONS`).
    margin: m.
    amplification: for kind "amplified".
    changes: the changes made after a result judged it, oldest first.
  """
  id: str
  statement: str
  source: str
  a: str
  b: str
  split: str = "test"
  metric: str = "distinct_correct"
  relation: str = ">"
  margin: float = 0.0
  kind: str = "compare"
  amplification: Optional[float] = None
  changes: Tuple[Change, ...] = ()

  def definition(self) -> Dict[str, Any]:
    """What the claim tests, without its wording: what a Change must record."""
    fields = ("kind", "a", "b", "split", "metric", "relation", "margin", "amplification")
    return {name: getattr(self, name) for name in fields}


RULE = dict(
    alpha=0.05,                # family-wise error of each domain's verdicts
    correction="bonferroni",   # every interval at level 1 - alpha / T
    replicates=20_000,         # bootstrap replicates of each interval (tails of ~10 at T = 50)
    min_seeds=2,               # fewer on either side: not judged
    steps=300,                 # every row of the final comparison, the same
    seeds=5,                   # fresh seeds per row (configs/sweeps/final.py)
    eval_problems=128,         # per split, x 64 samples
    eval_samples=64,
    rare_share=0.01,           # "rare": under 1% of the base model's test samples
    lambdas=(0.1, 0.3, 1.0, 3.0),   # the reward-shaping λ values tried
)
"""The seeds put "rare" at under 0.1% of the base model's samples; the base models'
rarest strategies sit at 0.09-0.18%, and none goes much lower without losing
competence (docs/base-models.md), so rare is the base-model targets' 1%."""

TUNING = dict(
    split="validation",
    criterion="pass@1",        # the best mean over seeds at the final step
    shown=("pass@1", "distinct_correct"),
    seeds=3,
    steps=300,
    learning_rates=(1e-5, 3e-5, 1e-4, 3e-4),
    extend_factor=3.0,         # an edge choice adds lr / 3 or lr x 3, until inside
    fixed="every other field at its config file's default (reward shaping at λ = its "
           "config's; the λ claim sweeps RULE['lambdas'] at the chosen learning rate)",
)
"""configs/sweeps/tuning.py runs it (grid, seeds, steps, the extension), and
experiments.analysis.records.CRITERION is its split and criterion."""

PASS_KS = (8, 16, 32, 64)
"""Every k the pass@k claims are judged at: 8 to 64, each its own claim."""


def _pass_at_k(prefix: str, a: str, b: str, relation: str, statement: str,
               source: str) -> Tuple[Claim, ...]:
  return tuple(Claim(f"{prefix}_{split}_pass@{k}",
                     statement.format(split=split, k=k), source, a, b, split=split,
                     metric=f"pass@{k}", relation=relation)
               for split in ("test", "ood") for k in PASS_KS)


SEEDS_CLAIMS = (
    Claim("grpo_collapses",
          "GRPO's distinct correct strategies fall below the base model's",
          "explainer: \"GRPO starts with 8+ reasoning clusters ... and collapses to 2-3\"",
          "GRPO", "Base", relation="<"),
    Claim("poly_epo_keeps",
          "Poly-EPO's distinct correct strategies are at least the base model's",
          "explainer: \"Poly-EPO (warm) maintains and grows diversity\"",
          "Poly-EPO", "Base", relation=">="),
    Claim("poly_epo_more_than_grpo",
          "Poly-EPO has more distinct correct strategies than GRPO",
          "summary: \"POLY-EPO discovers significantly more distinct successful strategies "
          "than standard methods\"",
          "Poly-EPO", "GRPO"),
    *_pass_at_k("poly_epo_beats_grpo", "Poly-EPO", "GRPO", ">",
                "Poly-EPO's {split} pass@{k} beats GRPO's",
                "summary: \"higher pass@k coverage\"; explainer: \"up to 20% better than "
                "GRPO at k=32\""),
    *_pass_at_k("grpo_below_base", "GRPO", "Base", "<",
                "GRPO's {split} pass@{k} falls below the base model's",
                "explainer: \"GRPO degrades below base model\" (pass@k at large k)"),
    Claim("poly_epo_pass@1",
          "Poly-EPO's test pass@1 is within 3 points of GRPO's",
          "explainer: \"Poly-EPO's pass@1 is comparable to GRPO\" (~27% vs ~28%)",
          "Poly-EPO", "GRPO", metric="pass@1", relation="within", margin=0.03),
    Claim("rare_amplified",
          "A rare strategy reaches ≥ 5× its base share under Poly-EPO and not under GRPO",
          "explainer: \"strategies ... the base model itself could only produce at very low "
          "probability ... The optimistic exploration mechanism amplified these rare "
          "strategies\"",
          "Poly-EPO", "GRPO", metric="share", kind="amplified", amplification=5.0),
    Claim("no_lambda",
          "No λ tried gives reward shaping both Poly-EPO's test pass@1 and its distinct "
          "correct strategies",
          "explainer: \"Too small a λ and diversity gets drowned out ... Too large and the "
          "model generates diverse garbage\"; \"No λ\"",
          "Poly-EPO", "Reward shaping", metric="pass@1 or distinct_correct", kind="lambda"),
    Claim("incorrect_samples_explore",
          "Poly-EPO has more distinct correct strategies than its correct-only ablation",
          "explainer: \"incorrect generations can get positive advantage if they add "
          "diversity to high-reward sets\" (optimistic exploration)",
          "Poly-EPO", "Poly-EPO (correct-only diversity)"),
)

PROJECT_CLAIMS = (
    Claim("windowed_pass@1",
          "Windowed Poly-EPO's test pass@1 beats Poly-EPO's",
          "this project, after Set RL note §6.1, note 1 (a window of states after each "
          "rollout state gets the set advantage): the set advantage on the first step only "
          "spares the later steps' slips, diversity's cost in execution",
          "Poly-EPO (windowed)", "Poly-EPO", metric="pass@1"),
    Claim("windowed_more_than_grpo",
          "Windowed Poly-EPO has more distinct correct strategies than GRPO",
          "this project: windowing keeps the set signal where the strategy is chosen",
          "Poly-EPO (windowed)", "GRPO"),
)

CRITIC_CLAIMS = (
    Claim("ppo_collapses",
          "PPO's distinct correct strategies fall below the base model's",
          "Set RL note §6.1: Poly-PPO against PPO as Poly-EPO against GRPO",
          "PPO", "Base", relation="<"),
    Claim("poly_ppo_more_than_ppo",
          "Poly-PPO has more distinct correct strategies than PPO",
          "Set RL note §6.1", "Poly-PPO", "PPO"),
    *_pass_at_k("poly_ppo_beats_ppo", "Poly-PPO", "PPO", ">",
                "Poly-PPO's {split} pass@{k} beats PPO's", "Set RL note §6.1"),
    Claim("poly_ppo_pass@1",
          "Poly-PPO's test pass@1 is within 3 points of PPO's",
          "Set RL note §6.1", "Poly-PPO", "PPO", metric="pass@1", relation="within",
          margin=0.03),
    Claim("rare_amplified_by_poly_ppo",
          "A rare strategy reaches ≥ 5× its base share under Poly-PPO and not under PPO",
          "Set RL note §6.1", "Poly-PPO", "PPO", metric="share", kind="amplified",
          amplification=5.0),
    Claim("vines_add_strategies",
          "Poly-PPO has more distinct correct strategies than Poly-EPO",
          "Set RL note §6.1, note 2: vines are an inductive bias that \"is not required\" "
          "with the polychromic objective, so this is expected to fail", "Poly-PPO",
          "Poly-EPO"),
    Claim("vines_add_accuracy",
          "Poly-PPO's test pass@1 beats Poly-EPO's",
          "Set RL note §6.1, note 2 (as above)", "Poly-PPO", "Poly-EPO", metric="pass@1"),
)

CLAIMS = SEEDS_CLAIMS + PROJECT_CLAIMS + CRITIC_CLAIMS
"""Every claim, in the report's order; each domain is judged on all of them."""


def rows(claims: Tuple[Claim, ...] = CLAIMS) -> Tuple[str, ...]:
  """The row labels the claims compare, each once, in the order they first appear:
  the algorithms the rerun tunes and trains (configs/sweeps/tuning.py), and Base."""
  return tuple(dict.fromkeys(label for claim in claims for label in (claim.a, claim.b)))
