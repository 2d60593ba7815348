r"""Poly-EPO with one setting of its authors' release at a time: what each one does.

  python -m experiments.sweep --sweep=configs/sweeps/recipe.py:domains=multiplication \
      --sweep_dir=runs/sweeps/recipe-multiplication
  python -m experiments.report runs/sweeps/final-multiplication \
      runs/sweeps/shaping_lambda-multiplication runs/sweeps/recipe-multiplication \
      --out=results/final --archive

configs/poly_epo.py and the release's recipe, configs/poly_epo_official.py, differ
in a few settings (`differences`: N 16 → 8, advantages standardised per prompt →
not, the loss's token mean → each response's token sum over a fixed length, the
gradient clip 1 → 0.3). Each run here is the final comparison's Poly-EPO
(configs/sweeps/final.py: its chosen setting, fresh seeds, steps and evaluation)
with one of them at the release's value, so that the report can say what each
does to pass@1 and strategies (`experiments.analysis.recipe`), beside the whole
release (a setting the choice already has is not run again; a change the chosen
setting cannot take, N = 8 under a chosen set size n ≥ 8, is left out with a
warning). The runs keep Poly-EPO's learning rate: they describe the recipe and
choose nothing; give their sweep directory after the final ones, so that the
report's Poly-EPO row stays the final sweep's.

Config string: domains=all|multiplication|polynomial_roots,
chosen=results/tuning/chosen.json, provisional=false (as configs/sweeps/final.py),
seeds, steps and exercises (claims.RULE's, a secondary row's seeds), size=default.
"""

import warnings
from typing import Any, Dict

from configs import choices, claims
from configs.sweeps import final, headline, tuning
from experiments.analysis import algorithms

OURS, RELEASE = "configs/poly_epo.py", "configs/poly_epo_official.py"


def differences(config_string: str) -> Dict[str, Any]:
  """{override key: the release's value} of every config.algorithm and config.train
  field where the release's recipe differs from Poly-EPO's, in key order."""
  ours, release = (headline.config_of(path, config_string) for path in (OURS, RELEASE))
  out = {}
  for section in ("algorithm", "train"):
    a, b = (algorithms.flat(c[section].to_dict()) for c in (ours, release))
    out.update({f"{section}.{k}": b[k] for k in sorted(b) if a.get(k) != b[k]})
  return out


def get_sweep(arg=None):
  args = choices.parse_arg(arg, domains="all", chosen="results/tuning/chosen.json",
                          provisional=False, seeds=claims.RULE["seeds"],
                          steps=claims.RULE["steps"], exercises=claims.RULE["eval_problems"],
                          size="default")
  shared = final.final_overrides(args.seeds, args.steps, args.size, args.exercises)
  runs = []
  for domain in headline.domains(args.domains):
    config_string = f"domain={domain},size={args.size}"
    entry = tuning.read_chosen(args.chosen, domain, provisional=args.provisional).get("poly_epo")
    if entry is None:
      raise ValueError(f"chosen={args.chosen!r} has no poly_epo for {domain!r}; tune it "
                       f"first (configs/sweeps/tuning.py).")
    overrides = dict(shared, **entry["overrides"], **{"run.eval_at_start": False})
    for key, value in differences(config_string).items():
      if overrides.get(key) == value:   # the chosen setting has the release's already
        continue
      run = headline.fit_smoke(entry["config_file"], config_string,
                               dict(overrides, **{key: value}), args.size)
      n, N = (run.get(k) for k in ("algorithm.set_size", "train.samples_per_prompt"))
      if n is not None and N is not None and n >= N:
        warnings.warn(f"{domain}: Poly-EPO's chosen set size n = {n} does not fit the "
                      f"release's N = {N}; that step is left out.")
        continue
      runs.append((entry["config_file"], config_string, run))
  return runs
