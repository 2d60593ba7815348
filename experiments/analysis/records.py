"""The run records a report reads, and the per-problem values in them.

  runs = records.load_runs(["runs/sweeps/headline"])
  rows = records.select_rows(runs, "multiplication")   # {row label: final record, run}
  records.per_problem(rows["GRPO"]["record"], "test", "pass@32")   # f64[seeds, problems]

`experiments.analysis.tables`, `claims`, `summary`, `tuning` and `plots` share these;
`experiments.analysis.stats` turns the per-problem values into intervals. A run's row
label is its config.json's `algorithm` (`experiments.analysis.algorithms`).
"""

import functools
import json
import os
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from configs import claims as claims_registry
from experiments.analysis import algorithms, stats
from polyepo.evaluation import splits

# Metrics (named as in summary.json) -> the per-problem list they are the mean of;
# "pass@k" is computed from "num_correct".
PER_PROBLEM_KEYS = {"distinct_correct": "distinct_correct", "distinct": "distinct",
                    "distinct_correct_families": "distinct_correct_families",
                    "branch_point": "branch_point", "majority_vote": "majority_vote"}
DISCOVERY_SHARE = 0.01  # a strategy is discovered once this share of rollouts is correct with it
RARE_SHARE = claims_registry.RULE["rare_share"]  # rare: under this share of the base's test samples
DOMAIN_TITLES = {"multiplication": "Multiplication", "polynomial_roots": "Polynomial roots"}


class RunRecord(NamedTuple):
  """What a finished (or partial) run directory holds: its config and records."""
  name: str
  domain: str
  algorithm: str           # table row label
  lam: Optional[float]     # reward shaping's λ
  config: Dict[str, Any]
  evals: List[Dict[str, Any]]   # eval.jsonl records, by step
  train: List[Dict[str, Any]]   # train.jsonl records, by step
  sweep: int = 0           # index of its sweep directory in `load_runs`' argument
  blocks: Tuple[str, ...] = ()   # the seed blocks joined into this run (`join_seed_blocks`)


def read_jsonl_or_empty(path: str) -> List[Dict[str, Any]]:
  """`writers.read_jsonl`, or [] for a missing file."""
  from polyepo.io import writers  # pylint: disable=g-import-not-at-top
  return writers.read_jsonl(path) if os.path.exists(path) else []


def load_runs(sweep_dirs: Sequence[str]) -> List[RunRecord]:
  """Every run directory (with an evaluation) under the sweep directories, by name,
  with the finished seed blocks of one setting joined (`join_seed_blocks`); a run's
  records are its eval.jsonl and train.jsonl, or their archived .jsonl.gz."""
  from polyepo.io import writers  # pylint: disable=g-import-not-at-top
  runs = []
  for index, sweep_dir in enumerate(sweep_dirs):
    root = os.path.join(sweep_dir, "runs")
    if not os.path.isdir(root):
      raise FileNotFoundError(f"{sweep_dir!r} is not a sweep directory (no runs/ inside).")
    for name in sorted(os.listdir(root)):
      workdir = os.path.join(root, name)
      evals = read_jsonl_or_empty(writers.jsonl_path(workdir, "eval.jsonl"))
      if not evals or not os.path.exists(os.path.join(workdir, "config.json")):
        continue
      with open(os.path.join(workdir, "config.json")) as f:
        config = algorithms.upgrade(json.load(f))
      spec = config["algorithm"]
      lam = spec.get("lam") if spec["name"] == "reward_shaping" else None
      label = config.get("label") or algorithms.label_of(spec, config.get("train"))
      runs.append(RunRecord(name, config["domain"], label, lam, config,
                            evals, read_jsonl_or_empty(writers.jsonl_path(workdir, "train.jsonl")),
                            sweep=index))
  if not runs:
    raise FileNotFoundError(f"No run with an evaluation under {', '.join(sweep_dirs)}.")
  return join_seed_blocks(runs)


def is_complete(run: RunRecord) -> bool:
  return run.evals[-1]["step"] == run.config["train"]["num_steps"]


# -- seed blocks ------------------------------------------------------------------


def _seeds(run: RunRecord) -> range:
  first = run.config["run"]["seed"]
  return range(first, first + run.config["run"]["num_seeds"])


def _setting_key(run: RunRecord) -> str:
  """The run's config but its seeds: what its seed blocks share."""
  config = dict(run.config, run={k: v for k, v in run.config["run"].items()
                                 if k not in ("seed", "num_seeds")})
  return json.dumps([run.sweep, config], sort_keys=True, default=str)


def join_seed_blocks(runs: Sequence[RunRecord]) -> List[RunRecord]:
  """`runs` with the finished runs of one setting joined into one run of all their seeds.

  A sweep may train a row's seeds as several runs ("seed blocks":
  configs/sweeps/final.py gives each run.seed 100, 105, ... and 5 seeds), so that
  each run fits between interruptions and its records can be kept as it finishes.
  Finished runs of one sweep directory whose config.json differ only in their
  seeds (run.seed, run.num_seeds) are one setting: the joined run lists every block's seeds in run.seed order,
  in every eval.jsonl and train.jsonl record (each "mean" recomputed over all
  of them, as one run of every seed would have recorded it; wall-clock times
  summed, the row's cost), and is named after its first block, with every block's
  name in `blocks`. Unfinished blocks stay runs of their own (`is_complete` is
  False), so a row counts only what has finished.

  Raises:
    ValueError: two runs of a setting share a seed (the same runs twice), or its
      blocks' records differ in their steps.
  """
  groups: Dict[str, List[RunRecord]] = {}
  for run in runs:
    if "seed" in run.config.get("run", {}) and is_complete(run):
      groups.setdefault(_setting_key(run), []).append(run)
  joined = {}
  for group in groups.values():
    if len(group) == 1:
      continue
    group = sorted(group, key=lambda r: r.config["run"]["seed"])
    for a, b in zip(group, group[1:]):
      if _seeds(a).stop > _seeds(b).start:
        raise ValueError(f"runs {a.name!r} and {b.name!r} are one setting with overlapping "
                         f"seeds ({_seeds(a).start}..{_seeds(a).stop - 1} and "
                         f"{_seeds(b).start}..{_seeds(b).stop - 1}): the same seeds twice.")
    steps = [([e["step"] for e in r.evals], [t["step"] for t in r.train]) for r in group]
    if any(s != steps[0] for s in steps):
      raise ValueError(f"the seed blocks {[r.name for r in group]} record different steps; "
                       f"they cannot be joined into one row.")
    evals = [_join_eval(records) for records in zip(*(r.evals for r in group))]
    train = [_join_train(records) for records in zip(*(r.train for r in group))]
    first = group[0]
    blocks = [[r.config["run"]["seed"], r.config["run"]["num_seeds"]] for r in group]
    config = dict(first.config, run=dict(first.config["run"], seed_blocks=blocks,
                                         num_seeds=sum(n for _, n in blocks)))
    joined[id(first)] = first._replace(config=config, evals=evals, train=train,
                                       blocks=tuple(r.name for r in group))
    joined.update({id(r): None for r in group[1:]})
  return [joined.get(id(r), r) for r in runs if joined.get(id(r), r) is not None]


def _join_eval(records: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
  """One eval.jsonl record of every block's seeds: each split's "seeds" in block
  order, its "mean" over all of them, its "seconds" summed."""
  from polyepo.evaluation import evaluate  # pylint: disable=g-import-not-at-top
  out = {"step": records[0]["step"]}
  for split in records[0]:
    if split == "step":
      continue
    seeds = [seed for record in records for seed in record[split]["seeds"]]
    out[split] = {"mean": evaluate.mean_over_seeds(seeds), "seeds": seeds}
    if all("seconds" in record[split] for record in records):
      out[split]["seconds"] = {part: round(sum(r[split]["seconds"][part] for r in records), 3)
                               for part in records[0][split]["seconds"]}
  return out


def _join_train(records: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
  """One train.jsonl record of every block's seeds: each metric's "name/seeds" in
  block order and its mean over them, seconds_per_step summed (the row's cost)."""
  out = {"step": records[0]["step"]}
  for key in records[0]:
    if key.endswith("/seeds"):
      seeds = [seed for record in records for seed in record[key]]
      out[key[:-len("/seeds")]] = np.mean(np.asarray(seeds, float), axis=0).tolist()
      out[key] = seeds
    elif key == "seconds_per_step":
      out[key] = sum(record[key] for record in records)
  unknown = [k for k in records[0] if k not in out]
  if unknown:
    raise ValueError(f"train.jsonl step {out['step']}: no per-seed values of {unknown} "
                     f"to join the seed blocks' records by.")
  return {k: out[k] for k in records[0]}


# -- per-problem values ---------------------------------------------------------


def require_per_problem(runs: Sequence[RunRecord]) -> None:
  """Raises ValueError naming the first eval record without per-problem values."""
  for run in runs:
    for record in run.evals:
      for split in splits.EVAL_SPLITS:
        for seed in record.get(split, {}).get("seeds", []):
          if "per_problem" not in seed:
            raise ValueError(
                f"run {run.name!r}: eval.jsonl step {record['step']}, split {split!r} has "
                f"no key 'per_problem' (the per-problem values the bootstrap resamples); "
                f"it was written by an older version: rerun with this version.")


def per_problem(record: Dict[str, Any], split: str, name: str) -> Optional[np.ndarray]:
  """f64[S, P]: metric `name` on each problem, per seed, of an eval record's split.

  `name` is "pass@k" (unbiased, from each problem's correct samples),
  "share:<strategy>" (the share of a problem's samples with that label),
  "correct:<strategy>" (the share of its samples that are correct and have that
  label) or a key of PER_PROBLEM_KEYS. None where it was not evaluated: the
  split is absent, k exceeds the samples drawn, no answers exist (majority
  vote), or the records hold no per-problem strategy counts (older records).
  """
  if split not in record:
    return None
  rows = []
  for seed in record[split]["seeds"]:
    values = seed["per_problem"]
    if name.startswith("pass@"):
      k, num_samples = int(name[len("pass@"):]), int(seed["num_samples"])
      if k > num_samples:
        return None
      rows.append(stats.pass_at_k(num_samples, values["num_correct"], k))
    elif name.startswith(("share:", "correct:")):
      kind, strategy = name.split(":", 1)
      key = "strategy_counts" if kind == "share" else "correct_counts"
      counts = values.get(key, {}).get(strategy)
      if counts is None:
        return None
      rows.append(np.asarray(counts, float) / int(seed["num_samples"]))
    elif PER_PROBLEM_KEYS[name] in values:
      rows.append(np.asarray(values[PER_PROBLEM_KEYS[name]], float))
    else:
      return None
  return np.stack(rows)


def value(record: Dict[str, Any], split: str, name: str) -> Optional[stats.Interval]:
  """Mean and 95% bootstrap interval of a metric in an eval record (None: not evaluated)."""
  values = per_problem(record, split, name)
  return None if values is None else stats.interval(values)


def num_seeds(record: Dict[str, Any], split: str) -> int:
  return len(record[split]["seeds"])


# -- choosing among settings ------------------------------------------------------

# The tuning criterion, registered before any tuning run (configs/claims.TUNING):
# the final evaluation's pass@1 on `validation` (mean over seeds and problems), the
# highest wins; ties go to the setting first in `setting` order (smaller learning
# rate first). `test` and `ood` never choose anything.
CRITERION = (claims_registry.TUNING["split"], claims_registry.TUNING["criterion"])


def setting(run: RunRecord) -> Dict[str, Any]:
  """{override key: value}: the run's config file's values it was given (learning
  rate and its algorithm's knobs, `algorithms.Algorithm.knobs`)."""
  spec = algorithms.flat(run.config["algorithm"])
  out = {"train.learning_rate": run.config["train"]["learning_rate"]}
  out.update({f"algorithm.{k}": spec[k] if k in spec else algorithms.KNOB_DEFAULTS[k]
              for k in algorithms.knobs(run.algorithm)})
  return out


def criterion(run: RunRecord) -> Optional[float]:
  """The tuning criterion of a run's final evaluation; None without `validation`."""
  values = per_problem(run.evals[-1], *CRITERION)
  return None if values is None else float(values.mean())


def choose(group: Sequence[RunRecord]) -> RunRecord:
  """The run of `group` (one algorithm's settings) with the best CRITERION.

  Raises ValueError if a run has no `validation` evaluation: a choice is never
  made on `test` or `ood`.
  """
  missing = [r.name for r in group if criterion(r) is None]
  if missing:
    raise ValueError(f"runs {missing} have no final {CRITERION[0]!r} evaluation, which "
                     f"chooses among settings ({CRITERION[1]}); rerun them with "
                     f"{CRITERION[0]!r} in run.eval_splits.")
  return max(in_grid_order(group), key=criterion)   # max keeps the first of equal values


def in_grid_order(group: Sequence[RunRecord]) -> List[RunRecord]:
  """One algorithm's runs by setting: learning rate, then the knobs (as `setting` lists them)."""
  return sorted(group, key=lambda r: tuple(setting(r).values()))


def describe(values: Dict[str, Any]) -> str:
  """A setting in words: 'lr=3e-05, λ=0.3', 'lr=3e-05, n=4, normalize=batch' (objective
  left out: it is in the label)."""
  values = {k.rsplit(".", 1)[-1]: v for k, v in values.items()}   # by field name
  if "normalize" in values:   # per prompt, over the batch, or none
    over = values.pop("normalize_over", "prompt")
    values["normalize"] = over if values["normalize"] else "none"
  names = {"learning_rate": "lr", "lam": "λ", "set_size": "n", "normalize": "normalize"}
  return ", ".join(f"{names[k]}={v:g}" if isinstance(v, float) else f"{names[k]}={v}"
                   for k, v in values.items() if k in names)


def select_rows(runs: List[RunRecord], domain: str) -> Dict[str, Dict[str, Any]]:
  """{row label: {"record": eval record, "run": RunRecord, "note": str}} of one domain.

  Base is the step-0 evaluation of the first complete GRPO run that has one, else
  of the first complete run that has one (all runs of a domain start from the
  same base model and evaluate it with the same keys; a sweep may evaluate it in
  one run only, `run.eval_at_start`). An algorithm's row comes from the first
  sweep directory (in `load_runs` order) that has a complete run of it: a later
  sweep that varies one knob (reward shaping's λ, configs/sweeps/shaping_lambda.py)
  adds points to the plots without choosing the row again, so that every row had
  the same tuning budget. Among several runs of one algorithm in that sweep (a
  grid of settings) the row is the one `choose` picks by the tuning criterion on
  `validation`.
  """
  runs = [r for r in runs if r.domain == domain and is_complete(r)]
  rows = {}
  if not runs:
    return rows
  started = [r for r in runs if r.evals[0]["step"] == 0]   # see run.eval_at_start
  if started:
    base_source = next((r for r in started if r.algorithm == "GRPO"), started[0])
    rows["Base"] = {"record": base_source.evals[0], "run": base_source, "note": "step 0"}
  by_label: Dict[str, List[RunRecord]] = {}
  for run in runs:
    by_label.setdefault(run.algorithm, []).append(run)
  for label, group in by_label.items():
    first = min(r.sweep for r in group)
    group = [r for r in group if r.sweep == first]
    best = choose(group) if len(group) > 1 else group[0]
    note = f"λ={best.lam:g}" if best.lam is not None else ""
    if len(group) > 1:
      note = (f"{describe(setting(best))}: best {CRITERION[0]} {CRITERION[1]} of "
              f"{len(group)} settings")
    rows[label] = {"record": best.evals[-1], "run": best, "note": note}
  ordered = {k: rows[k] for k in algorithms.ORDER if k in rows}
  ordered.update({k: v for k, v in sorted(rows.items()) if k not in ordered})
  return ordered


def shaping_by_lambda(runs: Sequence[RunRecord], domain: str) -> Dict[float, RunRecord]:
  """{λ: run}: reward shaping's complete runs of `domain` on its row's budget.

  The row is `select_rows`'s; a run joins when everything but λ matches it
  (learning rate, steps, seeds), so that every λ had the same budget; of several
  runs of one λ, the first sweep's. {} without a reward-shaping row.
  """
  row = select_rows(list(runs), domain).get("Reward shaping")
  if row is None:
    return {}

  def budget(run):
    return ({k: v for k, v in setting(run).items() if k != "algorithm.lam"},
            run.config["train"]["num_steps"], num_seeds(run.evals[-1], "test"))

  out: Dict[float, RunRecord] = {}
  for run in sorted((r for r in runs if r.domain == domain and r.algorithm == "Reward shaping"
                     and is_complete(r) and "test" in r.evals[-1]
                     and budget(r) == budget(row["run"])), key=lambda r: r.sweep):
    out.setdefault(run.lam, run)
  return dict(sorted(out.items()))


@functools.lru_cache(maxsize=None)
def _families(domain: str, env_json: str) -> Dict[str, str]:
  import envs  # pylint: disable=g-import-not-at-top
  env, _ = envs.make(domain, **json.loads(env_json))
  return dict(zip(env.strategy_names, env.strategy_families))


def strategy_families(run: RunRecord) -> Dict[str, str]:
  """{strategy name: family} of a run's domain, as its config.json records it
  (`strategy_families`, written by experiments.synthetic); for a run recorded
  before that field existed, from the domain's env (`env.strategy_families`)."""
  if "strategy_families" in run.config:
    return dict(run.config["strategy_families"])
  return _families(run.domain, json.dumps(run.config.get("env", {}), sort_keys=True))


def rare_strategies(rows: Dict[str, Dict[str, Any]]) -> List[str]:
  """Strategies with under RARE_SHARE of the base model's `test` samples (DEGENERATE aside)."""
  share = rows["Base"]["record"]["test"]["mean"]["strategy_share"]
  return [n for n, s in share.items() if n != "DEGENERATE" and s < RARE_SHARE]


def discovery_steps(run: RunRecord, names: Sequence[str]) -> Optional[Dict[str, Optional[int]]]:
  """{strategy: first training step at which DISCOVERY_SHARE of the rollouts (seed
  mean) are correct and follow it, None if never}; None when the run's train.jsonl
  has no `correct_strategy_share`."""
  train = [r for r in run.train if "correct_strategy_share" in r]
  if not train:
    return None
  out = {}
  for s, name in enumerate(names):
    out[name] = next((r["step"] for r in train
                      if s < len(r["correct_strategy_share"])
                      and r["correct_strategy_share"][s] >= DISCOVERY_SHARE), None)
  return out
