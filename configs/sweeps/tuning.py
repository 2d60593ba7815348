r"""The tuning grid: every algorithm's learning rate, then its own knobs, on `validation`.

Declared before any run; the choice is made by `python -m experiments.tuning`
with the criterion of `experiments.records.CRITERION` (final `validation`
pass@1). Two stages, so that every algorithm gets the same learning-rate grid
and the knobs only the learning rate's best value:

  stage=lr     every algorithm at its config's defaults, at each of LEARNING_RATES
               (6 algorithms × 3 = 18 runs per domain);
  stage=knobs  at the learning rate stage lr chose (read from `chosen`, the
               chosen.json that experiments.tuning wrote for stage lr): reward
               shaping's λ over LAMBDAS and Poly-EPO's set size n and advantage
               normalisation (per prompt, over the batch, none) over
               POLY_EPO_KNOBS, the defaults left out (they ran in stage lr):
               3 + 5 runs per domain.

  python -m experiments.sweep --sweep=configs/sweeps/tuning.py:domains=multiplication \
      --sweep_dir=runs/sweeps/tuning-lr-multiplication
  python -m experiments.tuning runs/sweeps/tuning-lr-multiplication --out=results/tuning/lr
  python -m experiments.sweep --sweep=configs/sweeps/tuning.py:domains=multiplication,stage=knobs,chosen=results/tuning/lr/chosen.json \
      --sweep_dir=runs/sweeps/tuning-knobs-multiplication
  python -m experiments.tuning runs/sweeps/tuning-lr-multiplication \
      runs/sweeps/tuning-knobs-multiplication --out=results/tuning --archive

Every tuning run trains `steps` steps (the final comparison's length) with
`seeds` seeds and evaluates `validation` only (64 problems × 32 samples, at
steps 0, 100, 200, 300), no forced accuracy: `test` and `ood` are never looked at.

Config string: domains=all|multiplication|polynomial_roots, stage=lr|knobs,
chosen=PATH (stage=knobs), provisional=false (true: accept a chosen.json written
while tuning runs were unfinished), seeds=2, steps=300, size=default.
"""

import json

from configs import choices
from configs import reward_shaping
from configs.sweeps import headline
from polyepo import train

LEARNING_RATES = (1e-5, 3e-5, 1e-4)
# (config file, overrides naming the algorithm), in report order.
ALGORITHMS = (("configs/grpo.py", {}), ("configs/reward_shaping.py", {}),
              ("configs/poly_epo.py", {}),
              ("configs/poly_epo.py", {"train.objective": "polychromic_correct_only"}),
              ("configs/ppo.py", {}), ("configs/poly_ppo.py", {}))
LAMBDAS = (0.1, 0.3, 1.0, 3.0)   # reward shaping's λ (its config's default among them)
# Poly-EPO's (set size n, normalize, normalize_over): n in {4, 8} at N = 16
# samples, each with advantages standardised per prompt, over the step's batch,
# or not at all (normalize_over is unused then; its default is kept).
POLY_EPO_KNOBS = tuple((n, normalize, over) for normalize, over in
                       ((True, "prompt"), (True, "batch"), (False, "prompt")) for n in (4, 8))
STAGES = ("lr", "knobs")
# The chosen.json field (experiments.tuning) listing a domain's planned tuning
# runs that had not finished: present only then.
UNFINISHED = "unfinished_tuning_runs"


def tuning_overrides(seeds: int, steps: int, size: str):
  """Run settings of every tuning run: validation only, no forced accuracy."""
  overrides = dict(headline.shared_overrides(seeds, size), **{
      "run.eval_splits": ("validation",), "run.eval_num_samples": 32,
      "run.eval_forced_problems": 0})
  if size != "smoke":
    overrides.update({"train.num_steps": steps, "run.eval_every": 100,
                      "run.checkpoint_every": 100})
  return overrides


def read_chosen(path: str, domain: str, *, provisional: bool = False):
  """{algorithm key: entry} of `domain` in a chosen.json (experiments.tuning).

  A domain whose tuning sweeps had unfinished runs when chosen.json was written
  has entries marked UNFINISHED: their choice may still change, so they are
  refused unless `provisional`.
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
                     f"provisional=true to train the choices as they stand.")
  return chosen[domain]


def chosen_learning_rates(path: str, domain: str, *, provisional: bool = False):
  """{algorithm key: learning rate} of `domain` in a chosen.json (read_chosen)."""
  if not path:
    raise ValueError("stage=knobs needs chosen=PATH, the chosen.json of stage lr "
                     "(python -m experiments.tuning ... --out=DIR writes DIR/chosen.json).")
  return {key: entry["overrides"]["train.learning_rate"]
          for key, entry in read_chosen(path, domain, provisional=provisional).items()}


def get_sweep(arg=None):
  args = choices.parse_arg(arg, domains="all", stage="lr", chosen="", provisional=False,
                          seeds=2, steps=300, size="default")
  if args.stage not in STAGES:
    raise ValueError(f"stage={args.stage!r} is not one of: {', '.join(STAGES)}.")
  shared = tuning_overrides(args.seeds, args.steps, args.size)
  runs = []
  for domain in headline.domains(args.domains):
    config_string = f"domain={domain},size={args.size}"
    if args.stage == "lr":
      runs += [(config_file, config_string, dict(shared, **algorithm, **{
          "train.learning_rate": lr})) for config_file, algorithm in ALGORITHMS
               for lr in LEARNING_RATES]
      continue
    lrs = chosen_learning_rates(args.chosen, domain, provisional=args.provisional)
    for key in ("reward_shaping", "poly_epo"):
      if key not in lrs:
        raise ValueError(f"chosen={args.chosen!r} has no {key!r} for {domain!r}.")
    default_lam = reward_shaping.get_config(config_string).train.lam
    defaults = train.TrainConfig()
    runs += [("configs/reward_shaping.py", config_string, dict(shared, **{
        "train.learning_rate": lrs["reward_shaping"], "train.lam": lam}))
             for lam in LAMBDAS if lam != default_lam]
    runs += [("configs/poly_epo.py", config_string, headline.fit_smoke(dict(shared, **{
        "train.learning_rate": lrs["poly_epo"], "train.set_size": n, "train.normalize": norm,
        "train.normalize_over": over}), args.size))
             for n, norm, over in POLY_EPO_KNOBS
             if (n, norm, over) != (defaults.set_size, defaults.normalize, defaults.normalize_over)]
  return runs
