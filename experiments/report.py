r"""Tables and plots from sweep directories.

  python -m experiments.report runs/sweeps/headline
  python -m experiments.report runs/sweeps/headline runs/sweeps/shaping_lambda --out=results

Reads every run under SWEEP_DIR/runs/ (config.json, eval.jsonl, train.jsonl) and
writes to --out (default SWEEP_DIR/report):

  report.md             one table per domain and split: Base, GRPO, reward shaping
                        (best λ), Poly-EPO and any other algorithm, final
                        evaluation, mean ± 95% CI over seeds (Student t); the
                        papers' claims checked; the sweep's command, commit,
                        machine and wall time.
  pass_at_k.png         pass@k against k, per domain and split.
  training.png          test pass@1, test pass@32 and ood pass@32 along training.
  distinct_correct.png  distinct correct strategies per prompt along training.
  strategy_shares.png   rollout strategy shares along training, per algorithm.
  shaping_lambda.png    reward shaping's final metrics against λ (when swept).
  <sweep name>/         with --archive: the run records (no checkpoints), itself a
                        sweep directory: `python -m experiments.report OUT/<sweep name>`
                        regenerates the same tables.

The Base row is the step-0 evaluation (the base model, before any update). The
reward-shaping row takes the λ with the highest final `test` pass@32. The tables
depend only on the run directories, so rerunning the report reproduces them.
Every claim is judged by one rule (`judge`): it holds only if it holds across
the 95% intervals over seeds, and a single seed is never judged.
"""

import json
import os
import shutil
from typing import Any, Dict, List, NamedTuple, Optional, Sequence

from absl import app, flags
import numpy as np

_OUT = flags.DEFINE_string("out", None, "Output directory (default: <first SWEEP_DIR>/report).")
_ARCHIVE = flags.DEFINE_bool("archive", False, "Also copy the run records (config.json, "
                             "train.jsonl, eval.jsonl, sweep.jsonl) to OUT/<sweep name>/, so "
                             "that OUT alone regenerates the report.")

SPLITS = ("test", "ood")
PASS_KS = (1, 8, 32, 64)
COLUMNS = ([(f"pass@{k}", f"pass_at_k/{k}") for k in PASS_KS]
           + [("distinct correct", "distinct_correct_strategies"),
              ("distinct", "distinct_strategies"),
              ("branch point", "branch_point"),
              ("majority vote", "majority_vote")])
ORDER = ("Base", "GRPO", "Dr. GRPO", "Reward shaping", "Poly-EPO")
COLORS = {"Base": "0.45", "GRPO": "tab:red", "Dr. GRPO": "tab:pink",
          "Reward shaping": "tab:orange", "Poly-EPO": "tab:blue",
          "Poly-EPO (correct-only diversity)": "tab:purple"}
DOMAIN_TITLES = {"multiplication": "Multiplication", "polynomial_roots": "Polynomial roots"}

# Two-sided 95% quantiles of Student's t with df = 1..30 degrees of freedom.
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def mean_ci(values: Sequence[float]):
  """(mean, half-width of the 95% Student-t interval); half-width nan for one value."""
  values = np.asarray([v for v in values if v is not None], float)
  if values.size == 0:
    return float("nan"), float("nan")
  if values.size == 1:
    return float(values[0]), float("nan")
  df = values.size - 1
  t = _T95[df - 1] if df <= len(_T95) else 1.96
  return float(values.mean()), float(t * values.std(ddof=1) / np.sqrt(values.size))


class RunRecord(NamedTuple):
  """What a finished (or partial) run directory holds: its config and records."""
  name: str
  domain: str
  algorithm: str           # table row label
  lam: Optional[float]     # reward shaping's λ
  config: Dict[str, Any]
  evals: List[Dict[str, Any]]   # eval.jsonl records, by step
  train: List[Dict[str, Any]]   # train.jsonl records, by step


def algorithm_label(config: Dict[str, Any]) -> str:
  """The row label of a run's config."""
  t = config["train"]
  if t["estimator"] == "grpo":
    return "GRPO" if t["normalize"] else "Dr. GRPO"
  if t["estimator"] == "reward_shaping":
    return "Reward shaping"
  names = {"polychromic": "Poly-EPO", "polychromic_correct_only": "Poly-EPO (correct-only diversity)",
           "pass_at_n": "Set RL pass@n", "mean_reward": "Set RL mean reward", "srl": "Set RL f_srl"}
  label = names.get(t["objective"], f"Set RL {t['objective']}")
  return label if t["estimator"] == "set_rl" else f"{t['estimator']} {label}"


def _read_jsonl(path: str) -> List[Dict[str, Any]]:
  """`writers.read_jsonl`, or [] for a missing file."""
  from polyepo import writers  # pylint: disable=g-import-not-at-top
  return writers.read_jsonl(path) if os.path.exists(path) else []


def load_runs(sweep_dirs: Sequence[str]) -> List[RunRecord]:
  """Every run directory (with an evaluation) under the sweep directories, by name."""
  runs = []
  for sweep_dir in sweep_dirs:
    root = os.path.join(sweep_dir, "runs")
    if not os.path.isdir(root):
      raise FileNotFoundError(f"{sweep_dir!r} is not a sweep directory (no runs/ inside).")
    for name in sorted(os.listdir(root)):
      workdir = os.path.join(root, name)
      evals = _read_jsonl(os.path.join(workdir, "eval.jsonl"))
      if not evals or not os.path.exists(os.path.join(workdir, "config.json")):
        continue
      with open(os.path.join(workdir, "config.json")) as f:
        config = json.load(f)
      lam = config["train"]["lam"] if config["train"]["estimator"] == "reward_shaping" else None
      runs.append(RunRecord(name, config["domain"], algorithm_label(config), lam, config,
                            evals, _read_jsonl(os.path.join(workdir, "train.jsonl"))))
  if not runs:
    raise FileNotFoundError(f"No run with an evaluation under {', '.join(sweep_dirs)}.")
  return runs


def is_complete(run: RunRecord) -> bool:
  return run.evals[-1]["step"] == run.config["train"]["num_steps"]


def metric(summary: Dict[str, Any], key: str):
  """A summary's value at a `pass_at_k/k`-style or plain key (None if absent)."""
  if key.startswith("pass_at_k/"):
    return summary["pass_at_k"].get(key.split("/")[1])
  return summary.get(key)


def seed_values(record: Dict[str, Any], split: str, key: str) -> List[float]:
  return [metric(s, key) for s in record[split]["seeds"]]


def select_rows(runs: List[RunRecord], domain: str) -> Dict[str, Dict[str, Any]]:
  """{row label: {"record": eval record, "run": RunRecord, "note": str}} of one domain.

  Base is the step-0 evaluation of the first complete run (all runs of a domain
  start from the same base model and evaluate it with the same keys). Among
  several reward-shaping runs the best λ by final test pass@32 is kept (pass@k at
  the largest k evaluated when fewer than 32 samples were drawn; ties: smallest λ).
  """
  runs = [r for r in runs if r.domain == domain and is_complete(r)]
  rows = {}
  if not runs:
    return rows
  base_source = next((r for r in runs if r.algorithm == "GRPO"), runs[0])
  rows["Base"] = {"record": base_source.evals[0], "run": base_source, "note": "step 0"}
  by_label: Dict[str, List[RunRecord]] = {}
  for run in runs:
    by_label.setdefault(run.algorithm, []).append(run)
  for label, group in by_label.items():
    if label == "Reward shaping" and len(group) > 1:
      k = min(32, min(int(r.evals[-1]["test"]["mean"]["num_samples"]) for r in group))
      def score(run):
        return mean_ci(seed_values(run.evals[-1], "test", f"pass_at_k/{k}"))[0]
      best = max(sorted(group, key=lambda r: r.lam), key=score)  # ties: the smallest λ
      note = (f"λ={best.lam:g}, best test pass@{k} of λ = "
              + ", ".join(f"{l:g}" for l in sorted({r.lam for r in group})))
      rows[label] = {"record": best.evals[-1], "run": best, "note": note}
    else:
      note = f"λ={group[0].lam:g}" if group[0].lam is not None else ""
      if len(group) > 1:
        note = (note + "; " if note else "") + f"{len(group)} runs, first shown ({group[0].name})"
      rows[label] = {"record": group[0].evals[-1], "run": group[0], "note": note}
  ordered = {k: rows[k] for k in ORDER if k in rows}
  ordered.update({k: v for k, v in sorted(rows.items()) if k not in ordered})
  return ordered


def _cell(values) -> str:
  mean, half = mean_ci(values)
  if np.isnan(mean):
    return "–"
  return f"{mean:.3f}" if np.isnan(half) else f"{mean:.3f} ± {half:.3f}"


def domain_table(rows: Dict[str, Dict[str, Any]], split: str) -> str:
  """A markdown table of one domain and split."""
  header = ["", "seeds", "steps"] + [c for c, _ in COLUMNS]
  lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  for label, row in rows.items():
    record = row["record"]
    if split not in record:
      continue
    name = f"{label} ({row['note']})" if row["note"] else label
    cells = [name, str(len(record[split]["seeds"])), str(record["step"])]
    cells += [_cell(seed_values(record, split, key)) for _, key in COLUMNS]
    lines.append("| " + " | ".join(cells) + " |")
  return "\n".join(lines)


SUMMARY_COLUMNS = (("test pass@1", "test", "pass_at_k/1"), ("test pass@32", "test", "pass_at_k/32"),
                   ("ood pass@1", "ood", "pass_at_k/1"), ("ood pass@32", "ood", "pass_at_k/32"),
                   ("ood pass@64", "ood", "pass_at_k/64"),
                   ("distinct correct (test)", "test", "distinct_correct_strategies"),
                   ("distinct (test)", "test", "distinct_strategies"))


def summary_table(rows_by_domain: Dict[str, Dict[str, Dict[str, Any]]]) -> str:
  """One markdown table of the headline numbers, every domain and row."""
  header = ["domain", ""] + [c for c, _, _ in SUMMARY_COLUMNS]
  lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  for domain, rows in rows_by_domain.items():
    for label, row in rows.items():
      record = row["record"]
      cells = [DOMAIN_TITLES.get(domain, domain), label]
      cells += [_cell(seed_values(record, split, key)) if split in record else "–"
                for _, split, key in SUMMARY_COLUMNS]
      lines.append("| " + " | ".join(cells) + " |")
  return "\n".join(lines)


def strategy_table(rows: Dict[str, Dict[str, Any]], split: str) -> str:
  """Markdown table of the final strategy shares (mean over seeds) per row."""
  first = next(iter(rows.values()))["record"][split]["mean"]["strategy_share"]
  names = list(first)
  lines = ["| | " + " | ".join(names) + " |", "|" + "---|" * (len(names) + 1)]
  for label, row in rows.items():
    share = row["record"][split]["mean"]["strategy_share"]
    lines.append(f"| {label} | " + " | ".join(f"{share[n]:.3f}" for n in names) + " |")
  return "\n".join(lines)


# One rule for every claim: a claim about per-seed values a and b holds only if it
# holds for every pair of values inside their two 95% intervals (so a claim that
# two means differ needs non-overlapping intervals), and is not judged with fewer
# than two seeds on either side (no interval).
RELATIONS = (">", "<", "within")
HOLDS, FAILS, UNJUDGED = "holds", "does not hold", "not judged"


def interval(values):
  """(low, high) of the 95% Student-t interval of the mean; None below two values."""
  mean, half = mean_ci(values)
  if np.isnan(half):
    return None
  return mean - half, mean + half


def judge(a: Sequence[float], b: Sequence[float], relation: str, margin: float = 0.0) -> str:
  """The verdict on a claim "a relation b" from per-seed values (HOLDS, FAILS or UNJUDGED).

  relation ">": a - b > margin;  "<": a - b < margin;  "within": |a - b| <= margin,
  each required of every a and b inside their 95% intervals.
  """
  if relation not in RELATIONS:
    raise ValueError(f"relation must be one of {', '.join(map(repr, RELATIONS))}; got {relation!r}.")
  ia, ib = interval(a), interval(b)
  if ia is None or ib is None:
    return UNJUDGED
  lowest, highest = ia[0] - ib[1], ia[1] - ib[0]   # range of a - b over the intervals
  if relation == ">":
    ok = lowest > margin
  elif relation == "<":
    ok = highest < margin
  else:
    ok = -margin <= lowest and highest <= margin
  return HOLDS if ok else FAILS


def _verdict(verdict: str) -> str:
  if verdict == UNJUDGED:
    return "**not judged** (fewer than 2 seeds: no interval)"
  return f"**{verdict}**"


def claims(rows: Dict[str, Dict[str, Any]]) -> List[str]:
  """The papers' claims, checked on one domain's final evaluations (markdown bullets).

  Each claim is judged by `judge`: it holds only when the 95% intervals over
  seeds show it.
  """
  if not {"Base", "GRPO", "Poly-EPO"} <= set(rows):
    return ["- (needs Base, GRPO and Poly-EPO runs)"]

  def values(label, split, key):
    return seed_values(rows[label]["record"], split, key)

  def text(label, split, key):
    mean, half = mean_ci(values(label, split, key))
    return f"{mean:.3f}" if np.isnan(half) else f"{mean:.3f} ± {half:.3f}"

  def claim(statement, a, b, split, key, relation, margin=0.0):
    verdict = judge(values(a, split, key), values(b, split, key), relation, margin)
    return f"- {statement}: {text(a, split, key)} vs {text(b, split, key)} → {_verdict(verdict)}"

  dc = "distinct_correct_strategies"
  out = [claim("GRPO's distinct correct strategies fall below the base model's",
               "GRPO", "Base", "test", dc, "<"),
         claim("Poly-EPO keeps them (at most 0.5 below the base model's)",
               "Poly-EPO", "Base", "test", dc, ">", -0.5),
         claim("Poly-EPO exceeds GRPO by more than 2 distinct correct strategies",
               "Poly-EPO", "GRPO", "test", dc, ">", 2.0)]
  for split in SPLITS:
    if np.isnan(mean_ci(values("GRPO", split, "pass_at_k/32"))[0]):
      out.append(f"- {split} pass@32: not evaluated (fewer than 32 samples per problem)")
      continue
    out.append(claim(f"Poly-EPO's {split} pass@32 beats GRPO's",
                     "Poly-EPO", "GRPO", split, "pass_at_k/32", ">"))
  out.append(claim("Poly-EPO's test pass@1 is within 3 points of GRPO's",
                   "Poly-EPO", "GRPO", "test", "pass_at_k/1", "within", 0.03))
  return out


def sweep_info(sweep_dirs: Sequence[str]) -> List[str]:
  """Markdown lines: each sweep's command, commit, machine and wall time."""
  lines = []
  for sweep_dir in sweep_dirs:
    events = _read_jsonl(os.path.join(sweep_dir, "sweep.jsonl"))
    starts = [e for e in events if e["event"] == "start"]
    ends = [e for e in events if e["event"] == "end"]
    runs = [e for e in events if e["event"] == "run" and e["returncode"] == 0]
    name = os.path.basename(os.path.normpath(sweep_dir))
    if not starts:
      lines.append(f"- `{name}`: no sweep.jsonl")
      continue
    wall = sum(e["seconds"] for e in ends)
    lines.append(f"- `{name}`: `{starts[0]['command']}` at commit `{starts[0]['commit']}`"
                 + (f" (resumed {len(starts) - 1}×)" if len(starts) > 1 else ""))
    lines.append(f"  - machine: {starts[0]['machine']}")
    lines.append(f"  - wall time {wall / 60:.1f} min over {len(ends)} invocation(s); "
                 f"{len(runs)} runs took " + ", ".join(f"{e['name']} {e['seconds'] / 60:.1f}"
                                                       for e in runs) + " min")
  return lines


def markdown(runs: List[RunRecord], sweep_dirs: Sequence[str]) -> str:
  """The whole report.md."""
  lines = ["# Results", "",
           "Final evaluation of each run (mean ± 95% Student-t interval over seeds). "
           "*distinct (correct)*: distinct (correct) strategies among a problem's samples, "
           "averaged over problems; *branch point*: mean shared-prefix length of two samples; "
           "*majority vote*: accuracy of the most common answer among all samples.", ""]
  rows_by_domain = {d: select_rows(runs, d) for d in sorted({r.domain for r in runs})}
  rows_by_domain = {d: rows for d, rows in rows_by_domain.items() if rows}
  lines += ["## Summary", "", summary_table(rows_by_domain), ""]
  for domain, rows in rows_by_domain.items():
    title = DOMAIN_TITLES.get(domain, domain)
    for split in SPLITS:
      record = rows["Base"]["record"]
      if split not in record:
        continue
      summary = record[split]["mean"]
      lines += [f"## {title} — `{split}` ({int(summary['num_problems'])} problems × "
                f"{int(summary['num_samples'])} samples)", "", domain_table(rows, split), ""]
    lines += [f"### {title} — final strategy shares (`test`)", "", strategy_table(rows, "test"), ""]
    lines += [f"### {title} — the papers' claims", ""] + claims(rows) + [""]
  incomplete = [r.name for r in runs if not is_complete(r)]
  if incomplete:
    lines += ["Incomplete runs (left out): " + ", ".join(incomplete), ""]
  lines += ["## Sweeps", ""] + sweep_info(sweep_dirs) + [""]
  return "\n".join(lines)


# -- plots --------------------------------------------------------------------


def _color(label):
  return COLORS.get(label, None)


def _smooth(x, window):
  x = np.asarray(x, float)
  if window <= 1 or len(x) < window:
    return x
  kernel = np.ones(window) / window
  padded = np.concatenate([np.full(window - 1, x[0]), x])
  return np.convolve(padded, kernel, mode="valid")


def plot_pass_at_k(runs, domains, path):
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  fig, axes = plt.subplots(len(domains), len(SPLITS), figsize=(5.5 * len(SPLITS), 4 * len(domains)),
                           squeeze=False)
  for i, domain in enumerate(domains):
    for j, split in enumerate(SPLITS):
      ax = axes[i, j]
      for label, row in select_rows(runs, domain).items():
        seeds = row["record"][split]["seeds"]
        ks = sorted(int(k) for k in seeds[0]["pass_at_k"])
        curves = np.array([[s["pass_at_k"][str(k)] for k in ks] for s in seeds])
        mean = curves.mean(0)
        ax.plot(ks, mean, label=label, color=_color(label), lw=2)
        if len(seeds) > 1:
          half = np.array([mean_ci(curves[:, c])[1] for c in range(len(ks))])
          ax.fill_between(ks, mean - half, mean + half, color=_color(label), alpha=0.15)
      ax.set_xscale("log", base=2)
      ax.set_xlabel("k (samples per problem)")
      ax.set_ylabel("pass@k")
      ax.set_title(f"{DOMAIN_TITLES.get(domain, domain)}: {split} split")
      ax.grid(alpha=0.3)
  axes[0, 0].legend(fontsize=8)
  fig.suptitle("pass@k after training (bands: 95% CI over seeds)")
  fig.tight_layout()
  fig.savefig(path, dpi=110)
  plt.close(fig)


def plot_training(runs, domains, path):
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  panels = [("test", "pass_at_k/1", "test pass@1"), ("test", "pass_at_k/32", "test pass@32"),
            ("ood", "pass_at_k/32", "ood pass@32")]
  fig, axes = plt.subplots(len(domains), len(panels), figsize=(5 * len(panels), 3.8 * len(domains)),
                           squeeze=False)
  for i, domain in enumerate(domains):
    for label, row in select_rows(runs, domain).items():
      if label == "Base":
        continue
      evals = row["run"].evals
      steps = [e["step"] for e in evals]
      for j, (split, key, title) in enumerate(panels):
        stats = [mean_ci(seed_values(e, split, key)) for e in evals]
        mean = np.array([m for m, _ in stats])
        half = np.nan_to_num(np.array([h for _, h in stats]))
        ax = axes[i, j]
        ax.plot(steps, mean, "o-", label=label, color=_color(label), lw=2)
        ax.fill_between(steps, mean - half, mean + half, color=_color(label), alpha=0.15)
        ax.set_title(f"{DOMAIN_TITLES.get(domain, domain)}: {title}")
        ax.set_xlabel("RL step")
        ax.grid(alpha=0.3)
  axes[0, 0].legend(fontsize=8)
  fig.suptitle("Evaluation along training (step 0 = base model; bands: 95% CI over seeds)")
  fig.tight_layout()
  fig.savefig(path, dpi=110)
  plt.close(fig)


def plot_distinct_correct(runs, domains, path, window=10):
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  fig, axes = plt.subplots(1, len(domains), figsize=(6 * len(domains), 4), squeeze=False)
  for i, domain in enumerate(domains):
    ax = axes[0, i]
    for label, row in select_rows(runs, domain).items():
      if label == "Base":
        continue
      run = row["run"]
      # Rollouts (N per prompt) and evaluation (more samples) count over different
      # sample sizes: compare curves within a kind, not across.
      values = np.array([r["distinct_correct_strategies/seeds"] for r in run.train])  # [T, S]
      mean = _smooth(values.mean(1), window)
      ax.plot([r["step"] for r in run.train], mean, label=label, color=_color(label), lw=2)
      evals = run.evals
      ax.plot([e["step"] for e in evals],
              [e["test"]["mean"]["distinct_correct_strategies"] for e in evals], "s--",
              color=_color(label), alpha=0.6, ms=5)
    n = runs[0].config["train"]["samples_per_prompt"]
    ax.set_title(f"{DOMAIN_TITLES.get(domain, domain)}")
    ax.set_xlabel("RL step")
    ax.set_ylabel("distinct correct strategies per prompt")
    ax.grid(alpha=0.3)
  axes[0, 0].legend(fontsize=8)
  samples = int(runs[0].evals[-1]["test"]["mean"]["num_samples"])
  fig.suptitle(f"Distinct correct strategies per prompt\nlines: training rollouts ({n} per "
               f"prompt, {window}-step mean); squares: test evaluation ({samples} samples)",
               fontsize=10)
  fig.tight_layout()
  fig.savefig(path, dpi=110)
  plt.close(fig)


def plot_strategy_shares(runs, domains, path, window=5):
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  rows_by_domain = {d: {k: v for k, v in select_rows(runs, d).items() if k != "Base"}
                    for d in domains}
  cols = max(len(r) for r in rows_by_domain.values())
  fig, axes = plt.subplots(len(domains), cols, figsize=(4.2 * cols, 3.6 * len(domains)),
                           squeeze=False)
  for i, domain in enumerate(domains):
    names = list(next(iter(rows_by_domain[domain].values()))["record"]["test"]["mean"]
                 ["strategy_share"])
    colors = list(plt.get_cmap("tab10").colors[:len(names) - 1]) + [(0.8, 0.8, 0.8)]
    for j, (label, row) in enumerate(rows_by_domain[domain].items()):
      ax = axes[i, j]
      train = row["run"].train
      shares = np.array([r["strategy_share"] for r in train])  # [T, K+1], seed mean
      smoothed = np.stack([_smooth(shares[:, k], window) for k in range(shares.shape[1])])
      ax.stackplot([r["step"] for r in train], smoothed, labels=names, colors=colors)
      ax.set_ylim(0, 1)
      ax.set_title(f"{DOMAIN_TITLES.get(domain, domain)}: {label}", fontsize=9)
      ax.set_xlabel("RL step")
      if j == 0:
        ax.set_ylabel("share of rollouts")
    for j in range(len(rows_by_domain[domain]), cols):
      axes[i, j].axis("off")
    axes[i, -1].legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=7)
  fig.suptitle(f"Strategy shares of the training rollouts ({window}-step mean over seeds)")
  fig.tight_layout()
  fig.savefig(path, dpi=110)
  plt.close(fig)


def plot_shaping_lambda(runs, domains, path) -> bool:
  """Final test metrics against λ; False (no plot) when λ was not swept."""
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  shaping = [r for r in runs if r.algorithm == "Reward shaping" and is_complete(r)]
  if len({r.lam for r in shaping}) < 2:
    return False
  panels = [("pass_at_k/1", "test pass@1"), ("pass_at_k/32", "test pass@32"),
            ("distinct_correct_strategies", "distinct correct (test)")]
  fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.8), squeeze=False)
  for domain in domains:
    group = sorted((r for r in shaping if r.domain == domain), key=lambda r: r.lam)
    if not group:
      continue
    for j, (key, title) in enumerate(panels):
      stats = [mean_ci(seed_values(r.evals[-1], "test", key)) for r in group]
      axes[0, j].errorbar([r.lam for r in group], [m for m, _ in stats],
                          yerr=np.nan_to_num([h for _, h in stats]), marker="o", capsize=3,
                          label=DOMAIN_TITLES.get(domain, domain))
      axes[0, j].set_xscale("log")
      axes[0, j].set_xlabel("λ (weight of the diversity bonus)")
      axes[0, j].set_title(title)
      axes[0, j].grid(alpha=0.3)
  axes[0, 0].legend(fontsize=8)
  fig.suptitle("Reward shaping: final evaluation against λ (bars: 95% CI over seeds)")
  fig.tight_layout()
  fig.savefig(path, dpi=110)
  plt.close(fig)
  return True


RECORDS = ("config.json", "train.jsonl", "eval.jsonl")


def archive_records(sweep_dir: str, destination: str) -> None:
  """Copies a sweep's records (not its checkpoints or logs) to `destination`."""
  if os.path.abspath(sweep_dir) == os.path.abspath(destination):
    return
  for name in ("sweep.json", "sweep.jsonl"):
    if os.path.exists(os.path.join(sweep_dir, name)):
      os.makedirs(destination, exist_ok=True)
      shutil.copyfile(os.path.join(sweep_dir, name), os.path.join(destination, name))
  for run in sorted(os.listdir(os.path.join(sweep_dir, "runs"))):
    target = os.path.join(destination, "runs", run)
    os.makedirs(target, exist_ok=True)
    for name in RECORDS:
      source = os.path.join(sweep_dir, "runs", run, name)
      if os.path.exists(source):
        shutil.copyfile(source, os.path.join(target, name))


def write_report(sweep_dirs: Sequence[str], out: str, plots: bool = True,
                 archive: bool = False) -> List[str]:
  """Writes report.md (and the plots) into `out`; returns the files written."""
  runs = load_runs(sweep_dirs)
  os.makedirs(out, exist_ok=True)
  if archive:
    for sweep_dir in sweep_dirs:
      archive_records(sweep_dir, os.path.join(out, os.path.basename(os.path.normpath(sweep_dir))))
  written = [os.path.join(out, "report.md")]
  with open(written[0], "w") as f:
    f.write(markdown(runs, sweep_dirs))
  if plots:
    import matplotlib  # pylint: disable=g-import-not-at-top
    matplotlib.use("Agg")
    domains = sorted({r.domain for r in runs if is_complete(r)})
    for name, plot in (("pass_at_k.png", plot_pass_at_k), ("training.png", plot_training),
                       ("distinct_correct.png", plot_distinct_correct),
                       ("strategy_shares.png", plot_strategy_shares)):
      plot(runs, domains, os.path.join(out, name))
      written.append(os.path.join(out, name))
    if plot_shaping_lambda(runs, domains, os.path.join(out, "shaping_lambda.png")):
      written.append(os.path.join(out, "shaping_lambda.png"))
  return written


def main(argv):
  sweep_dirs = argv[1:]
  if not sweep_dirs:
    raise app.UsageError("Usage: python -m experiments.report SWEEP_DIR [SWEEP_DIR ...] "
                         "[--out=DIR]")
  out = _OUT.value or os.path.join(sweep_dirs[0], "report")
  for path in write_report(sweep_dirs, out, archive=_ARCHIVE.value):
    print(path)


if __name__ == "__main__":
  app.run(main)
