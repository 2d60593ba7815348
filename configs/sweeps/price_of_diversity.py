r"""Exploratory validation runs: windowed Poly-EPO, Poly-PPO and PPO at their chosen settings.

  python -m experiments.sweep --sweep=configs/sweeps/price_of_diversity.py:domains=multiplication \
      --sweep_dir=runs/sweeps/price_of_diversity-multiplication
  python -m experiments.report runs/sweeps/price_of_diversity-multiplication \
      results/final/final-multiplication --out=runs/price_of_diversity-multiplication

Each run trains as a final-comparison run does (configs/sweeps/final.py: its seeds
from 100, its steps, 128 problems × 64 samples with forced accuracy) and is
evaluated on `validation` only, so that its numbers sit beside the final runs'
validation rows (GRPO, Poly-EPO, PPO) without touching `test` or `ood`.

* `windowed`: windowed Poly-EPO at Poly-EPO's chosen settings (chosen.json's
  `poly_epo` entry). Windowed Poly-EPO standardises both of its advantages over
  each prompt's group, so a Poly-EPO choice of `normalize_over=batch` becomes
  `normalize=True` over the prompt (the closest setting it accepts).
* `poly_ppo`, `ppo`: Poly-PPO and PPO at their chosen settings (their own
  entries), with the configs' critic (`value_model="surprise"`, which the final
  runs predate).

These are exploratory numbers: nothing here is judged as a claim.

Config string: domains=all|multiplication|polynomial_roots, algorithms=windowed+poly_ppo
(a '+'-separated subset of windowed, poly_ppo, ppo), chosen=results/tuning/chosen.json, seeds=3, steps=300,
size=default.
"""

from configs import choices
from configs.sweeps import final, headline, tuning

ALGORITHMS = {"windowed": ("configs/poly_epo_windowed.py", "poly_epo"),
              "poly_ppo": ("configs/poly_ppo.py", "poly_ppo"),
              "ppo": ("configs/ppo.py", "ppo")}


def windowed_overrides(poly_epo: dict) -> dict:
  """Poly-EPO's chosen overrides as windowed Poly-EPO accepts them (per-prompt groups)."""
  overrides = dict(poly_epo)
  if overrides.get("train.normalize_over", "prompt") != "prompt":
    overrides.update({"train.normalize": True, "train.normalize_over": "prompt"})
  return overrides


def get_sweep(arg=None):
  args = choices.parse_arg(arg, domains="all", algorithms="windowed+poly_ppo",
                          chosen="results/tuning/chosen.json", seeds=3, steps=300,
                          size="default")
  names = args.algorithms.split("+")
  unknown = [name for name in names if name not in ALGORITHMS]
  if unknown or not names:
    raise ValueError(f"algorithms={args.algorithms!r}: {', '.join(unknown) or 'none'} not "
                     f"among {', '.join(ALGORITHMS)} ('+'-separated).")
  shared = dict(final.final_overrides(args.seeds, args.steps, args.size),
                **{"run.eval_splits": ("validation",), "run.eval_at_start": False})
  runs = []
  for domain in headline.domains(args.domains):
    chosen = tuning.read_chosen(args.chosen, domain)
    for name in names:
      config_file, key = ALGORITHMS[name]
      overrides = chosen[key]["overrides"]
      if name == "windowed":
        overrides = windowed_overrides(overrides)
      runs.append((config_file, f"domain={domain},size={args.size}",
                   headline.fit_smoke(dict(shared, **overrides), args.size)))
  return runs
