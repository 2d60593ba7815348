r"""The pilot: GRPO and Poly-EPO with a few seeds on the class splits, to size the comparison.

  python -m experiments.sweep --sweep=configs/sweeps/pilot.py:domains=multiplication \
      --sweep_dir=runs/sweeps/pilot-multiplication --parallel=2
  python -m experiments.power runs/sweeps/pilot-multiplication runs/sweeps/pilot-polynomial_roots \
      --width=bootstrap --out=results/pilot --archive

The comparison is sized from the variance of its differences (exercise, seed,
residual: `experiments.power`), which only runs on the splits it will use can
measure. Each domain trains the two rows most primary claims compare, GRPO and
Poly-EPO, at their tuned settings (`chosen`, as in configs/sweeps/final.py),
with `seeds` seeds from FIRST_SEED (apart from tuning's 0.. and the comparison's
100..: a pilot's seeds are never reused by the runs it sizes), for the
comparison's `steps`, and evaluates `validation`, `test` and `ood` on
EVAL_EXERCISES exercises each (every exercise of a TFDS split, `envs.datasets`)
× 64 samples at the end; the GRPO run also evaluates the base model (step 0), so
the claims against the base model are sized too. Its runs (rerun on the final base
models into pilot-v2-<domain>) and their power analysis are in results/pilot; the
size it registered is in configs/claims.py (`RULE`, "The size").

Config string: domains=all|multiplication|polynomial_roots,
chosen=results/tuning/chosen.json, seeds=5, steps=300, size=default (smoke: the
whole flow in minutes).
"""

from configs import choices
from configs.sweeps import final, headline, tuning

FIRST_SEED = 200
KEYS = ("grpo", "poly_epo")  # chosen.json keys of the rows trained
EVAL_EXERCISES = 256  # envs.datasets.SPLIT_SIZE, every exercise of a split (importing it loads TFDS)


def get_sweep(arg=None):
  args = choices.parse_arg(arg, domains="all", chosen="results/tuning/chosen.json",
                          seeds=5, steps=300, size="default")
  shared = dict(final.final_overrides(args.seeds, args.steps, args.size),
                **{"run.seed": FIRST_SEED})
  if args.size != "smoke":
    shared["run.eval_num_problems"] = EVAL_EXERCISES
  return [run for domain in headline.domains(args.domains)
          for run in final.chosen_runs(tuning.read_chosen(args.chosen, domain), domain,
                                       shared, args.size, keys=KEYS)]
