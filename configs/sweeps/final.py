r"""The final comparison: every algorithm at the setting tuning chose, at the registered size.

  python -m experiments.sweep --sweep=configs/sweeps/final.py:domains=multiplication \
      --sweep_dir=runs/sweeps/final-multiplication
  python -m experiments.report runs/sweeps/final-multiplication --out=results/final --archive

Each algorithm of `chosen` (the chosen.json that `python -m experiments.tuning`
wrote from the tuning sweeps, configs/sweeps/tuning.py: the rows the claims
compare and those beside them, `tuning.BESIDE`, once tuned) trains `steps` steps
from the domain's base model with fresh seeds (seeds 100.. : none of the tuning
runs' seeds): `seeds_primary` seeds for a row a primary claim compares
(`claims.primary_rows`), `seeds` for every other; and is evaluated on
`validation`, `test` and `ood` (`exercises` exercises × 64 samples, with
forced-strategy accuracy) at the end; the rollouts' metrics at every step
(train.jsonl) show whether training has flattened. The base model is evaluated
at step 0 of the GRPO runs (the Base row, `run.eval_at_start`: every run would
record the same numbers, up to the evaluation's sampling). A row's seeds train
as runs of `block` seeds each ("seed blocks": run.seed 100, 105, ...), each short
enough to finish between interruptions, so that its records can be kept as it
finishes; the report joins a row's blocks into one run of all its seeds
(`experiments.analysis.records.join_seed_blocks`). The defaults are the size registered from the
pilot (`claims.RULE`; configs/sweeps/pilot.py, docs/experiments.md#the-registered-size).

Config string: domains=all|multiplication|polynomial_roots,
chosen=results/tuning/chosen.json, provisional=false (true: train the choices of a
chosen.json written while tuning runs were unfinished), seeds, steps and
exercises (the registered ones), seeds_primary=0 (the registered 40; at
size=smoke `seeds`), block=5 (seeds per run; 0: one run per row), size=default
(smoke: the whole flow in minutes; a chosen set size keeps its n,
headline.fit_smoke).
"""

import itertools

from configs import choices, claims
from configs.sweeps import headline, tuning

RULE = claims.RULE

FIRST_SEED = 100   # tuning runs use seeds 0, 1, 2 (run.seed = 0, TUNING's 3 seeds)
BASE_RUN = "grpo"  # the row whose runs also evaluate the base model (step 0)
BLOCK = RULE["seeds"]   # seeds per run: a secondary row is one run, a primary row 8


def final_overrides(seeds: int, steps: int, size: str, exercises: int = RULE["eval_problems"]):
  """Run settings of every final run (`seeds` each; chosen_runs' `primary_seeds`
  gives a primary row its own)."""
  overrides = dict(headline.shared_overrides(seeds, size), **{"run.seed": FIRST_SEED})
  if size != "smoke":
    overrides.update({"run.eval_num_problems": exercises, "train.num_steps": steps,
                      "run.eval_every": 0, "run.checkpoint_every": 100})
  return overrides


def seed_blocks(overrides, block: int):
  """`overrides` (a row's, with run.seed and run.num_seeds) as one per run of
  `block` seeds (the last may have fewer), in seed order; [overrides] for
  block = 0 or at least the row's seeds."""
  first, seeds = overrides["run.seed"], overrides["run.num_seeds"]
  if block < 0:
    raise ValueError(f"block={block}: the seeds per run must be >= 1 (0: one run per row).")
  if not block or block >= seeds:
    return [overrides]
  return [dict(overrides, **{"run.seed": first + start,
                             "run.num_seeds": min(block, seeds - start)})
          for start in range(0, seeds, block)]


def chosen_runs(chosen, domain: str, shared, size: str, keys=None, primary_seeds=None,
                block: int = 0):
  """Sweep entries training each choice of a domain's `chosen` (all, or those of
  `keys`), with `shared` overrides, and `primary_seeds` seeds (if given) for a
  row a primary claim compares, in runs of `block` seeds (`seed_blocks`);
  BASE_RUN's runs also evaluate the base model. Every row's first block comes
  first (rows in key order), then every second block, and so on: a sweep stopped
  early leaves each row with as many seeds as it can."""
  config_string = f"domain={domain},size={size}"
  primary = {a.key for a in tuning.ALGORITHMS if a.label in claims.primary_rows()}
  rows = []
  for key, entry in sorted(chosen.items()):
    if keys is not None and key not in keys:
      continue
    overrides = dict(shared, **entry["overrides"], **{"run.eval_at_start": key == BASE_RUN})
    if primary_seeds is not None and key in primary:
      overrides["run.num_seeds"] = primary_seeds
    rows.append([(entry["config_file"], config_string,
                  headline.fit_smoke(entry["config_file"], config_string, run, size))
                 for run in seed_blocks(overrides, block)])
  return [run for blocks in itertools.zip_longest(*rows) for run in blocks if run is not None]


def get_sweep(arg=None):
  args = choices.parse_arg(arg, domains="all", chosen="results/tuning/chosen.json",
                          provisional=False, seeds_primary=0,
                          seeds=RULE["seeds"], steps=RULE["steps"],
                          exercises=RULE["eval_problems"], block=BLOCK, size="default")
  # 40 seeds a row would make the smoke flow, meant to take minutes, take hours.
  primary_seeds = args.seeds_primary or (args.seeds if args.size == "smoke"
                                         else RULE["seeds_primary"])
  shared = final_overrides(args.seeds, args.steps, args.size, args.exercises)
  runs = []
  for domain in headline.domains(args.domains):
    chosen = tuning.read_chosen(args.chosen, domain, provisional=args.provisional)
    runs += chosen_runs(chosen, domain, shared, args.size, primary_seeds=primary_seeds,
                        block=args.block)
  return runs
