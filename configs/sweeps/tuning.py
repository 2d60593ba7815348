r"""The tuning sweep: the registered learning-rate grid for every algorithm, on `validation`.

Follows the tuning rule registered in configs/claims.py (`TUNING`) before any
tuning run: every algorithm the claims compare, and those reported in any case
(`BESIDE`; together `ALGORITHMS`), trains at each of the same learning rates,
with the same seeds and steps, every other field at its config file's default;
`python -m experiments.tuning` chooses each one's learning rate by the best final
`validation` pass@1 (`experiments.analysis.records.CRITERION`) and shows distinct
correct beside it. A choice at the edge of its algorithm's grid
is extended on that side, one step (× or ÷ `TUNING["extend_factor"]`) per round,
until every choice is inside its grid:

  python -m experiments.sweep --sweep=configs/sweeps/tuning.py:domains=multiplication \
      --sweep_dir=runs/sweeps/tuning-multiplication
  python -m experiments.tuning runs/sweeps/tuning-multiplication --out=results/tuning
  # while results/tuning/chosen.json has a choice at an edge ("at_edge"):
  python -m experiments.sweep \
      --sweep=configs/sweeps/tuning.py:domains=multiplication,extend=results/tuning/chosen.json \
      --sweep_dir=runs/sweeps/tuning-multiplication-extend1
  python -m experiments.tuning runs/sweeps/tuning-multiplication \
      runs/sweeps/tuning-multiplication-extend1 --out=results/tuning --archive

Every tuning run trains `steps` steps (the final comparison's length) with
`seeds` seeds and evaluates `validation` only (64 problems × 32 samples, at
steps 0, 100, 200, 300), no forced accuracy: `test` and `ood` are never looked at.
The final and λ sweeps (final.py, shaping_lambda.py) refuse a chosen.json whose
choices are provisional: a tuning run unfinished, or a choice at its grid's edge.

Config string: domains=all|multiplication|polynomial_roots, extend=PATH (a
chosen.json: only the next learning rate beyond each edge choice), provisional=false
(true: extend from a chosen.json written while tuning runs were unfinished),
only=KEY+KEY (the grid of these algorithms alone, by summary key, e.g.
only=dr_grpo+poly_epo_official to tune rows added after a tuning: pass their
sweep directory to experiments.tuning beside the earlier ones), seeds=3 and
steps=300 (TUNING's), size=default.
"""

import json
from typing import Dict, List, Optional, Tuple

from configs import choices, claims
from configs.sweeps import headline
from experiments.analysis import algorithms

TUNING = claims.TUNING
BESIDE = ("Dr. GRPO", "Poly-EPO (as released)")
"""Rows tuned and trained whether or not a claim compares them, so that the report
shows them beside the claims' rows: the Poly-EPO authors' own recipe
(configs/poly_epo_official.py) and the GRPO with its loss (configs/dr_grpo.py)."""
ALGORITHMS = tuple(a for a in algorithms.ALGORITHMS
                   if (a.label in claims.rows() or a.label in BESIDE) and a.config)
"""The algorithms tuned: every row the claims compare but the base model, and BESIDE,
in report order."""
# The chosen.json fields (experiments.tuning) listing a domain's planned tuning
# runs that had not finished, and the side of its grid a choice sits on
# ("lowest", "highest", or "only" for a grid of one learning rate): present only then.
UNFINISHED = "unfinished_tuning_runs"
AT_EDGE = "at_edge"


def tuning_overrides(seeds: int, steps: int, size: str):
  """Run settings of every tuning run: validation only, no forced accuracy."""
  overrides = dict(headline.shared_overrides(seeds, size), **{
      "run.eval_splits": ("validation",), "run.eval_num_samples": 32,
      "run.eval_forced_problems": 0})
  if size != "smoke":
    overrides.update({"train.num_steps": steps, "run.eval_every": 100,
                      "run.checkpoint_every": 100})
  return overrides


def algorithm_overrides(algorithm: algorithms.Algorithm, config_string: str) -> Dict[str, object]:
  """The overrides that make `algorithm.config` run `algorithm`: its identifying
  config.algorithm (and config.train) values that the config file does not already set."""
  built = headline.config_of(algorithm.config, config_string)
  config = algorithms.flat(built.algorithm.to_dict())
  if config["name"] != algorithm.algorithm.get("name", config["name"]):
    raise ValueError(f"{algorithm.config} runs {config['name']!r}, not {algorithm.label}'s "
                     f"{algorithm.algorithm['name']!r}.")
  out = {f"algorithm.{k}": v for k, v in algorithm.algorithm.items() if config[k] != v}
  out.update({f"train.{k}": v for k, v in algorithm.train.items() if built.train[k] != v})
  return out


def selected(only: str) -> Tuple[algorithms.Algorithm, ...]:
  """The ALGORITHMS a sweep's `only=` value names ("": all of them), in report order."""
  if not only:
    return ALGORITHMS
  keys = only.split("+")
  unknown = [k for k in keys if k not in {a.key for a in ALGORITHMS}]
  if unknown:
    raise ValueError(f"only={only!r}: {', '.join(map(repr, unknown))} not among the tuned "
                     f"algorithms' keys: {', '.join(a.key for a in ALGORITHMS)}.")
  return tuple(a for a in ALGORITHMS if a.key in keys)


def at_edge(learning_rate: float, grid) -> Optional[str]:
  """The side of `grid` (the learning rates tried) that `learning_rate` sits on, or None."""
  low, high = min(grid), max(grid)
  if low == high:
    return "only"
  return "lowest" if learning_rate == low else "highest" if learning_rate == high else None


def beyond(learning_rate: float, edge: str) -> Tuple[float, ...]:
  """The learning rates one step past an edge choice, to 2 significant digits."""
  factor = TUNING["extend_factor"]
  steps = {"lowest": (1 / factor,), "highest": (factor,), "only": (1 / factor, factor)}[edge]
  return tuple(float(f"{learning_rate * step:.2g}") for step in steps)


def read_chosen(path: str, domain: str, *, provisional: bool = False, edges: bool = False):
  """{algorithm key: entry} of `domain` in a chosen.json (experiments.tuning).

  A domain whose tuning sweeps had unfinished runs when chosen.json was written
  has entries marked UNFINISHED: their choice may still change, so they are
  refused unless `provisional`. So is a choice marked AT_EDGE (the grid is to be
  extended first), unless `edges` or `provisional`.
  """
  if not path:
    raise ValueError("chosen=PATH is empty; it names the chosen.json that "
                     "`python -m experiments.tuning ... --out=DIR` writes as DIR/chosen.json.")
  with open(path) as f:
    chosen = json.load(f)
  if domain not in chosen:
    raise ValueError(f"chosen={path!r} has no domain {domain!r} (it has: "
                     f"{', '.join(sorted(chosen)) or 'none'}); tune it first "
                     f"(configs/sweeps/tuning.py).")
  waiting = sorted({name for entry in chosen[domain].values()
                    for name in entry.get(UNFINISHED, ())})
  if waiting and not provisional:
    raise ValueError(f"chosen={path!r} is provisional for {domain!r}: {len(waiting)} tuning "
                     f"run(s) had not finished ({', '.join(waiting)}), so a choice may still "
                     f"change. Finish the tuning sweep and rerun experiments.tuning, or pass "
                     f"provisional=true to use the choices as they stand.")
  outside = sorted(f"{key} ({entry[AT_EDGE]})" for key, entry in chosen[domain].items()
                   if AT_EDGE in entry)
  if outside and not (edges or provisional):
    raise ValueError(f"chosen={path!r} is provisional for {domain!r}: the choices of "
                     f"{', '.join(outside)} sit at their grid's edge, and the registered "
                     f"tuning rule extends the grid until each is inside "
                     f"(configs/sweeps/tuning.py:extend={path}). Pass provisional=true to "
                     f"use the choices as they stand.")
  return {key: dict(entry, overrides=algorithms.upgrade_overrides(key, entry["overrides"]))
          for key, entry in chosen[domain].items()}


def extension(path: str, domain: str, size: str, shared, provisional: bool) -> List[tuple]:
  """The runs one step beyond each of `domain`'s edge choices in chosen.json `path`."""
  runs = []
  for key, entry in sorted(read_chosen(path, domain, provisional=provisional,
                                       edges=True).items()):
    if AT_EDGE not in entry:
      continue
    lr = entry["overrides"]["train.learning_rate"]
    config_string = f"domain={domain},size={size}"
    runs += [(entry["config_file"], config_string, headline.fit_smoke(
        entry["config_file"], config_string,
        dict(shared, **dict(entry["overrides"], **{"train.learning_rate": new})), size))
             for new in beyond(lr, entry[AT_EDGE])]
  return runs


def get_sweep(arg=None):
  args = choices.parse_arg(arg, domains="all", extend="", provisional=False, only="",
                          seeds=TUNING["seeds"], steps=TUNING["steps"], size="default")
  shared = tuning_overrides(args.seeds, args.steps, args.size)
  tuned = selected(args.only)
  if args.only and args.extend:
    raise ValueError("only= and extend= cannot be combined: an extension runs the edge "
                     "choices of its chosen.json, whichever algorithms they are.")
  runs = []
  for domain in headline.domains(args.domains):
    config_string = f"domain={domain},size={args.size}"
    if args.extend:
      runs += extension(args.extend, domain, args.size, shared, args.provisional)
      continue
    runs += [(algorithm.config, config_string, dict(
        shared, **algorithm_overrides(algorithm, config_string), **{"train.learning_rate": lr}))
             for algorithm in tuned for lr in TUNING["learning_rates"]]
  if not runs:
    raise ValueError(f"extend={args.extend!r}: every choice of {args.domains} is inside its "
                     f"grid already; nothing to extend (configs/sweeps/final.py trains them).")
  return runs
