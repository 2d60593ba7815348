r"""The final comparison: every algorithm at the setting tuning chose, ≥ 5 seeds, on held-out splits.

  python -m experiments.sweep --sweep=configs/sweeps/final.py:domains=multiplication \
      --sweep_dir=runs/sweeps/final-multiplication
  python -m experiments.report runs/sweeps/final-multiplication --out=results/final --archive

Each algorithm of `chosen` (the chosen.json that `python -m experiments.tuning`
wrote from the tuning sweeps, configs/sweeps/tuning.py: the rows the claims
compare and those beside them, `tuning.BESIDE`, once tuned) trains `steps` steps with
`seeds` fresh seeds (seeds 100.. : none of the tuning runs' seeds) from the
domain's base model, and is evaluated on `validation`, `test` and `ood` (128
problems × 64 samples, with forced-strategy accuracy) at the end; the rollouts'
metrics at every step (train.jsonl) show whether training has flattened. The
base model is evaluated once, at step 0 of the GRPO run (the Base row; every
run would record the same numbers, `run.eval_at_start`).

Config string: domains=all|multiplication|polynomial_roots,
chosen=results/tuning/chosen.json, provisional=false (true: train the choices of a
chosen.json written while tuning runs were unfinished), seeds=5, steps=300,
size=default (smoke: the whole flow in minutes; a chosen set size keeps its n,
headline.fit_smoke).
"""

from configs import choices
from configs.sweeps import headline, tuning

FIRST_SEED = 100   # tuning runs use seeds 0, 1, 2 (run.seed = 0, TUNING's 3 seeds)
BASE_RUN = "grpo"  # the run that also evaluates the base model (step 0)


def final_overrides(seeds: int, steps: int, size: str):
  """Run settings of every final run."""
  overrides = dict(headline.shared_overrides(seeds, size), **{"run.seed": FIRST_SEED})
  if size != "smoke":
    overrides.update({"run.eval_num_problems": 128, "train.num_steps": steps,
                      "run.eval_every": 0, "run.checkpoint_every": 100})
  return overrides


def chosen_runs(chosen, domain: str, shared, size: str, keys=None):
  """Sweep entries training each choice of a domain's `chosen` (all, or those of
  `keys`), in key order, with `shared` overrides; BASE_RUN also evaluates the base
  model."""
  config_string = f"domain={domain},size={size}"
  return [(entry["config_file"], config_string,
           headline.fit_smoke(entry["config_file"], config_string,
                              dict(shared, **entry["overrides"],
                                   **{"run.eval_at_start": key == BASE_RUN}), size))
          for key, entry in sorted(chosen.items()) if keys is None or key in keys]


def get_sweep(arg=None):
  args = choices.parse_arg(arg, domains="all", chosen="results/tuning/chosen.json",
                          provisional=False, seeds=5, steps=300, size="default")
  shared = final_overrides(args.seeds, args.steps, args.size)
  runs = []
  for domain in headline.domains(args.domains):
    chosen = tuning.read_chosen(args.chosen, domain, provisional=args.provisional)
    runs += chosen_runs(chosen, domain, shared, args.size)
  return runs
