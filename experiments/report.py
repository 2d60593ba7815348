r"""Tables, claims, summary.json and plots from sweep directories.

  python -m experiments.report runs/sweeps/headline
  python -m experiments.report runs/sweeps/headline runs/sweeps/shaping_lambda --out=results

Reads every run under SWEEP_DIR/runs/ (config.json, eval.jsonl, train.jsonl;
`experiments.analysis.records`) and writes to --out (default SWEEP_DIR/report):

  report.md             per domain: a table per split evaluated (`validation`,
                        `test`, `ood`; Base, GRPO, reward shaping, Poly-EPO and any
                        other algorithm, final evaluation, each metric's mean [95%
                        interval]), the strategies' table, the step each strategy
                        is discovered at, each row's pass@1 difference to GRPO
                        split into strategy choice and execution
                        (`experiments.analysis.tables`); the papers' claims checked, the
                        same claims for Poly-PPO against PPO, and reward shaping
                        at every λ swept against Poly-EPO, its point against
                        their λ curve (`experiments.analysis.claims`);
                        Poly-EPO's recipe against its authors' release, one
                        setting at a time (`experiments.analysis.recipe`, with
                        the recipe sweep);
                        the strategy mixture each row's objective would choose
                        given forced accuracies, and what it predicts
                        (`experiments.analysis.optimum`); the critics' explained
                        variance beside the most any critic could explain
                        (`experiments.analysis.critics`);
                        then each sweep's command, commit, machine and wall time,
                        and each run's cost: training and each evaluation, in all and
                        per seed (`experiments.analysis.archive`).
  summary.json          the same numbers and every claim's verdict with the paired
                        interval it rests on, byte-stable (`experiments.analysis.summary`).
  pass_at_k.png         pass@k against k, per domain and split.
  training.png          test pass@1, test pass@32 and ood pass@32 along training.
  distinct_correct.png  distinct correct strategies per prompt along training.
  strategy_shares.png   rollout strategy shares along training, per algorithm.
  rare_strategies.png   along training, the share of each strategy that had
                        under 1% of the base model's test samples.
  discovery.png         strategies discovered so far along training (a strategy
                        is discovered at the first step where >= 1% of the
                        rollouts are correct and follow it).
  forced_accuracy.png   each strategy's forced accuracy at each evaluation (when
                        recorded).
  exploration.png       decoy mass and distinct correct families along training
                        (those recorded).
  advantages.png        along training, the share of correct responses with a
                        negative advantage, of incorrect ones with a positive
                        advantage, and the advantage scale of all-correct
                        groups (when recorded; 0 for GRPO).
  shaping_lambda.png    reward shaping's final test pass@1 and distinct correct
                        against λ, Poly-EPO as a band (when λ was swept).
                        (The plots are drawn by `experiments.analysis.plots`.)
  <sweep name>/         with --archive: the run records (no checkpoints), itself a
                        sweep directory: `python -m experiments.report OUT/<sweep name>`
                        regenerates the same report.md and summary.json, byte for byte.

The Base row is the step-0 evaluation (the base model, before any update). An
algorithm's row comes from the first SWEEP_DIR that has it, and among several
settings there the one with the best final `validation` pass@1
(`records.select_rows`); a later SWEEP_DIR's runs of it (the λ sweep) only add
points to the plots. The outputs depend only on the run records, so rerunning the
report reproduces them. How the intervals are drawn and the claims judged:
`experiments.analysis.claims` and `experiments.analysis.stats`.

Records written before the per-problem values existed are refused with a message
naming the missing key. Such a mistake (and a missing sweep directory) is one
line, `error: ...`, exit status 2, with nothing written; --verbose adds the
traceback (experiments.cli).
"""

import os
from typing import List, Sequence

from absl import app, flags

from experiments import cli, power
from experiments.analysis import critics, optimum, recipe, stats
from experiments.analysis.archive import archive_sweeps, cost_lines, sweep_info, unfinished
from experiments.analysis import claims as claims_lib
from experiments.analysis.records import (DISCOVERY_SHARE, DOMAIN_TITLES, RARE_SHARE, RunRecord,
                                 is_complete, load_runs, rare_strategies, require_per_problem,
                                 select_rows, strategy_families)
from experiments.analysis.summary import summary_json
from experiments.analysis.tables import (SATURATED_NOTE, discovery_table, domain_table,
                                pass_at_1_sources, strategy_table, summary_table)
from polyepo.evaluation import splits

# experiments.tuning defines --out and --archive too; allow_override lets one
# process (the tests) import both modules. A FlagHolder reads its flag by name, so
# each module sees the value parsed.
_OUT = flags.DEFINE_string("out", None, "Output directory (default: <first SWEEP_DIR>/report).",
                           allow_override=True)
_ARCHIVE = flags.DEFINE_bool("archive", False, "Also copy the run records (config.json, "
                             "train.jsonl and eval.jsonl gzipped, sweep.jsonl) to "
                             "OUT/<sweep name>/, so that OUT alone "
                             "regenerates the report.", allow_override=True)


INTRO = (
    "Final evaluation of each run: mean over seeds and problems [95% interval]. The "
    f"interval is a bootstrap over problems and seeds ({stats.NUM_REPLICATES} replicates, "
    "each resampling the problems and the seeds with replacement; percentiles 2.5 and "
    "97.5). A claim compares two rows of a domain by the paired bootstrap of their "
    "difference (the same problems drawn for both, seeds drawn independently) at the "
    "claim's level: it *holds* when that interval clears the claim's margin, is "
    "*refuted* when it shows any effect to be smaller than the claim's smallest effect of "
    "interest δ, and *undecided* otherwise; the claims are preregistered (`configs/claims.py`): "
    "the primary claims of both domains form one family (Holm), each domain's secondary "
    "claims another (Bonferroni); with fewer than 2 seeds on either side a claim is not "
    "judged. *distinct (correct)*: distinct (correct) strategies "
    "among a problem's samples, averaged over problems; *families*: the same count over "
    "strategy families; *branch point*: mean shared-prefix length of two samples; "
    "*majority vote*: accuracy of the most common answer among all samples. "
    + SATURATED_NOTE)


SOURCES_NOTE = (
    "pass@1 is the sum over strategies of share × accuracy (accuracy here over all "
    "problems). The difference to GRPO splits exactly into *strategy choice* (Σ Δshare × "
    "mean accuracy: where the samples go) and *execution* (Σ Δaccuracy × mean share: how "
    "often they are right there), each with its paired bootstrap interval; the largest "
    "single-strategy terms are point estimates.")


LAMBDA_NOTE = (
    "Every λ trained on the same budget as the comparison's reward-shaping row (its "
    "learning rate, seeds, steps and evaluation); each difference is Poly-EPO minus "
    "reward shaping at that λ with its paired 95% interval: ahead (behind) when the whole "
    "interval lies above (below) 0. A description: the claim (`no_lambda`, among the "
    "primary claims) is judged on the frontier statistic, Poly-EPO's distinct correct "
    "minus the most the λ curve reaches at its pass@1 or more. The plot: "
    "`shaping_lambda.png`.")


NEEDS_NOTE = (
    "What each undecided claim would need (`experiments.power` on these records: the "
    "variance of its difference split into exercises, seeds and the rest, the observed "
    f"difference taken as the true one): its chance of a decision now, and the seeds per "
    f"row, or exercises, that would make it {power.POWER:g}, at the least level its "
    "family gives a claim.")


def needs_lines(needs) -> List[str]:
  """A markdown bullet per undecided claim: `power.needs` in words."""
  lines = []
  for claim_id, need in needs.items():
    if "not_sized" in need:
      lines.append(f"- `{claim_id}`: not sized ({need['not_sized']}).")
      continue
    exercises, seeds = need["exercises"], need["seeds"]
    if need["seeds_needed"] is not None:
      by_seeds = f"{need['seeds_needed']} seeds per row at {exercises} exercises"
    elif need["never_seeds"]:
      by_seeds = f"no number of seeds at {exercises} exercises"
    else:
      by_seeds = f"more than {power.SEARCH_SEEDS} seeds per row at {exercises} exercises"
    by_exercises = (f"{need['exercises_needed']} exercises at {seeds} seeds"
                    if need["exercises_needed"] is not None
                    else f"more than {power.SEARCH_EXERCISES} exercises at {seeds} seeds")
    lines.append(f"- `{claim_id}`: difference {need['difference']:+.3f}, chance of a "
                 f"decision now {need['p_now']:.2f} ({seeds} seeds, {exercises} exercises); "
                 f"{power.POWER:g} needs {by_seeds}, or {by_exercises}.")
  return lines


def claims_note(judged: claims_lib.Judgement) -> str:
  """The line above a domain's claims: both families' corrections."""
  rule = claims_lib.registry.RULE
  primary, secondary = judged.primary, judged.secondary
  spans = {1: "this domain alone", 2: "both domains"}.get(
      len(primary.domains), f"{len(primary.domains)} domains")
  return (f"Preregistered in `configs/claims.py` on {rule['registered']} (the papers' "
          "wording first, with its source): holds, refuted (any effect smaller than the "
          "claim's δ) or undecided, on the paired interval at the claim's level. "
          f"*Primary* (the first {primary.size // max(len(primary.domains), 1)}): one family "
          f"across {spans}, M = {primary.size}, α = "
          f"{primary.alpha:g} by Holm's step-down over each claim's holding and refutation "
          f"nulls (each claim's level at least {primary.level:.3f}%; its adjusted p-values "
          f"shown). *Secondary*: {secondary.size} intervals, each at {secondary.level:.3f}% "
          f"(Bonferroni: α = {secondary.alpha:g} over the domain's secondary claims). "
          f"{rule['replicates']} bootstrap replicates; registered at {rule['steps']} steps "
          f"and {rule['seeds']} seeds per row.")


def markdown(runs: List[RunRecord], sweep_dirs: Sequence[str]) -> str:
  """The whole report.md."""
  require_per_problem(runs)
  lines = ["# Results", "", INTRO, ""]
  missing = [run["name"] for run in unfinished(runs, sweep_dirs)]
  if missing:
    lines += [f"**Partial: {len(missing)} run(s) have not finished** and are left out of "
              "everything below: " + ", ".join(missing) + ".", ""]
  rows_by_domain = {d: select_rows(runs, d) for d in sorted({r.domain for r in runs})}
  rows_by_domain = {d: rows for d, rows in rows_by_domain.items() if rows}
  for domain, rows in rows_by_domain.items():
    if "Base" not in rows:
      raise ValueError(f"No complete {domain} run evaluated the base model at step 0 "
                       f"(run.eval_at_start): the report needs one for its Base row.")
  lines += ["## Summary", "", summary_table(rows_by_domain), ""]
  judged_all = claims_lib.judge_all(runs, rows_by_domain)
  for domain, rows in rows_by_domain.items():
    title = DOMAIN_TITLES.get(domain, domain)
    families = strategy_families(rows["Base"]["run"])
    for split in splits.EVAL_SPLITS:
      record = rows["Base"]["record"]
      if split not in record:
        continue
      head = record[split]["mean"]
      lines += [f"## {title} — `{split}` ({int(head['num_problems'])} problems × "
                f"{int(head['num_samples'])} samples)", "", domain_table(rows, split), ""]
    lines += [f"### {title} — strategies (`test`, final evaluation)", "",
              "Share of the samples; accuracy on the problems the strategy applies to; "
              "forced accuracy (the strategy imposed on the model) where recorded.", "",
              strategy_table(rows, "test", families), ""]
    rare = rare_strategies(rows)
    lines += [f"### {title} — discovery", "",
              f"Rare strategies (under {RARE_SHARE:.0%} of the base model's `test` samples): "
              + (", ".join(f"`{n}`" for n in rare) or "none") + ". "
              f"First training step at which at least {DISCOVERY_SHARE:.0%} of the rollouts "
              "are correct and follow the strategy (seed mean):", "",
              discovery_table(rows, families), ""]
    judged = judged_all[domain]
    lines += [f"### {title} — the preregistered claims", "", claims_note(judged), ""]
    lines += ["Primary:", ""] + claims_lib.bullets(
        [c for c in judged.claims if c.claim.primary]) + [""]
    lines += ["Secondary:", ""] + claims_lib.bullets(
        [c for c in judged.claims if not c.claim.primary]) + [""]
    needs = power.undecided_needs(judged, rows)
    if needs:
      lines += [NEEDS_NOTE, ""] + needs_lines(needs) + [""]
    if judged.lambda_lines:
      lines += [f"### {title} — reward shaping across λ against Poly-EPO (`test`)", "",
                LAMBDA_NOTE, ""] + judged.lambda_lines + [""]
    sources = pass_at_1_sources(rows)
    if sources:
      lines += [f"### {title} — where each pass@1 difference to GRPO comes from (`test`)", "",
                SOURCES_NOTE, "", sources, ""]
    lines += recipe.section(runs, rows, title)
    lines += optimum.section(rows, title)
    lines += critics.section(rows, title)
  lines += ["## Sweeps", ""] + sweep_info(sweep_dirs) + [""]
  lines += ["What each finished run cost, from its records (a row's seed blocks together; "
            "wall-clock time on the machine of its sweep, above):", ""]
  lines += cost_lines([r for r in runs if is_complete(r)]) + [""]
  return "\n".join(lines)


def write_report(sweep_dirs: Sequence[str], out: str, plots: bool = True,
                 archive: bool = False) -> List[str]:
  """Writes report.md, summary.json (and the plots) into `out`; returns the files written.

  Raises ValueError, before writing anything, for records without per-problem values.
  """
  runs = load_runs(sweep_dirs)
  require_per_problem(runs)
  texts = (markdown(runs, sweep_dirs), summary_json(runs))  # fail before writing
  os.makedirs(out, exist_ok=True)
  if archive:
    archive_sweeps(sweep_dirs, out)
  written = [os.path.join(out, "report.md"), os.path.join(out, "summary.json")]
  for path, text in zip(written, texts):
    with open(path, "w") as f:
      f.write(text)
  if plots:
    import matplotlib  # pylint: disable=g-import-not-at-top
    matplotlib.use("Agg")
    from experiments.analysis import plots as plots_lib  # pylint: disable=g-import-not-at-top
    domains = sorted({r.domain for r in runs if is_complete(r)})
    for name, plot in (("pass_at_k.png", plots_lib.plot_pass_at_k),
                       ("training.png", plots_lib.plot_training),
                       ("distinct_correct.png", plots_lib.plot_distinct_correct),
                       ("strategy_shares.png", plots_lib.plot_strategy_shares),
                       ("rare_strategies.png", plots_lib.plot_rare_strategies)):
      plot(runs, domains, os.path.join(out, name))
      written.append(os.path.join(out, name))
    for name, plot in (("discovery.png", plots_lib.plot_discovery),
                       ("forced_accuracy.png", plots_lib.plot_forced_accuracy),
                       ("exploration.png", plots_lib.plot_exploration),
                       ("advantages.png", plots_lib.plot_advantage_alignment),
                       ("shaping_lambda.png", plots_lib.plot_shaping_lambda)):
      if plot(runs, domains, os.path.join(out, name)):
        written.append(os.path.join(out, name))
  return written


def main(argv):
  sweep_dirs = argv[1:]
  if not sweep_dirs:
    raise app.UsageError("Usage: python -m experiments.report SWEEP_DIR [SWEEP_DIR ...] "
                         "[--out=DIR] [--archive]")
  out = _OUT.value or os.path.join(sweep_dirs[0], "report")
  for path in write_report(sweep_dirs, out, archive=_ARCHIVE.value):
    print(path)


if __name__ == "__main__":
  cli.run(main)
