r"""Reward shaping's diversity weight λ ∈ {0.1, 0.3, 1, 3}, for the λ plot beside Poly-EPO.

  python -m experiments.sweep --sweep=configs/sweeps/shaping_lambda.py:domains=multiplication \
      --sweep_dir=runs/sweeps/shaping_lambda-multiplication
  python -m experiments.report runs/sweeps/final-multiplication \
      runs/sweeps/shaping_lambda-multiplication --out=results/final --archive

With chosen=PATH (a chosen.json of experiments.tuning, the default), each λ that
the final comparison does not already train runs as the final comparison's reward
shaping does (configs/sweeps/final.py: its chosen learning rate, seeds, steps and
evaluation), so the λ plot (`shaping_lambda.png`) compares every λ with Poly-EPO
on one budget (the base model's step-0 evaluation is the final sweep's; report
the two sweeps together, the final sweep first). The report's reward-shaping row
stays the final sweep's run, at its config's λ: these runs only add points
to the λ plot, so reward shaping gets no more selection than the other algorithms
(experiments.analysis.records.select_rows). With chosen= (empty): every λ
at the config's defaults and the headline's settings.

Config string: domains=all|multiplication|polynomial_roots,
chosen=results/tuning/chosen.json, provisional=false (as configs/sweeps/final.py),
seeds, steps and exercises (the registered ones, claims.RULE), size=default.
"""

from configs import choices, claims
from configs.sweeps import final, headline, tuning

LAMBDAS = claims.RULE["lambdas"]


def get_sweep(arg=None):
  args = choices.parse_arg(arg, domains="all", chosen="results/tuning/chosen.json",
                          provisional=False, seeds=claims.RULE["seeds"],
                          steps=claims.RULE["steps"], exercises=claims.RULE["eval_problems"],
                          size="default")
  if not args.chosen:
    return headline.one_knob_sweep(f"domains={args.domains},size={args.size},seeds=3",
                                   "configs/reward_shaping.py", "algorithm.lam", LAMBDAS)
  shared = final.final_overrides(args.seeds, args.steps, args.size, args.exercises)
  runs = []
  for domain in headline.domains(args.domains):
    entry = tuning.read_chosen(args.chosen, domain,
                               provisional=args.provisional).get("reward_shaping")
    if entry is None:
      raise ValueError(f"chosen={args.chosen!r} has no reward_shaping for {domain!r}; tune "
                       f"it first (configs/sweeps/tuning.py).")
    overrides = dict(shared, **entry["overrides"])
    runs += [(entry["config_file"], f"domain={domain},size={args.size}",
              dict(overrides, **{"algorithm.lam": lam, "run.eval_at_start": False}))
             for lam in LAMBDAS if lam != entry["overrides"]["algorithm.lam"]]
  return runs
