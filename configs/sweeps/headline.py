r"""The headline sweep: GRPO vs reward shaping vs Poly-EPO on both domains.

  python -m experiments.sweep --sweep=configs/sweeps/headline.py
  python -m experiments.report runs/sweeps/headline

Each algorithm trains `seeds` seeds (vmapped in one process) from the domain's
base model; the Base row of the report is every run's step-0 evaluation. The
last runs are the correct-only-diversity ablation (`polychromic_correct_only`:
diversity counted among correct responses only). Evaluation draws 64 samples
per problem so that pass@64 and 64-sample majority votes can be reported.

Config string: domains=all|multiplication|polynomial_roots (all: both domains, in
that order), size=smoke|default|paper (default), seeds=3.
"""

import importlib
import os

from configs import choices

ALGORITHMS = ("grpo", "reward_shaping", "poly_epo")


def shared_overrides(seeds: int, size: str):
  """Run settings shared by every run of the sweeps."""
  overrides = {"run.num_seeds": seeds, "run.eval_num_samples": 64, "run.eval_num_problems": 64}
  if size == "smoke":
    overrides.update({"run.eval_num_samples": 8, "run.eval_num_problems": 4})
  return overrides


def fit_smoke(config_file: str, config_string: str, overrides: dict, size: str) -> dict:
  """`overrides` of a run of `config_file` with room for its set size at size=smoke,
  else unchanged.

  The smoke preset samples 4 responses per prompt (3 vines per rollout state), too
  few for a tuned set size n ≥ 4 (1 <= n < N, n < N_v); a smoke run of a tuned
  setting keeps n and samples 2n responses (and n + 1 vines, for an algorithm
  with vines) instead.
  """
  keys = [k for k in overrides if k.startswith("algorithm.") and k.endswith(".set_size")]
  if size != "smoke" or not keys:
    return overrides
  n = overrides[keys[0]]
  out = dict(overrides, **{"train.samples_per_prompt": max(4, 2 * n)})
  if "vines" in config_of(config_file, config_string).algorithm:
    out["algorithm.vines.samples"] = max(3, n + 1)
  return out


def config_of(config_file: str, config_string: str):
  """The ConfigDict a sweep entry's config file builds from its config string."""
  module = importlib.import_module(os.path.splitext(config_file)[0].replace("/", "."))
  return module.get_config(config_string)


def domains(value: str):
  """The domains a sweep's `domains=` config-string value names: all, or one."""
  if value == "all":
    return choices.DOMAINS
  if value not in choices.DOMAINS:
    raise ValueError(f"domains={value!r} is not one of: all, {', '.join(choices.DOMAINS)}.")
  return (value,)


def get_sweep(arg=None):
  args = choices.parse_arg(arg, domains="all", size="default", seeds=3)
  shared = shared_overrides(args.seeds, args.size)
  chosen = domains(args.domains)
  runs = [(f"configs/{algorithm}.py", f"domain={domain},size={args.size}", dict(shared))
          for domain in chosen for algorithm in ALGORITHMS]
  runs += [("configs/poly_epo.py", f"domain={domain},size={args.size}",
            dict(shared, **{"algorithm.objective": "polychromic_correct_only"}))
           for domain in chosen]
  return runs


def one_knob_sweep(arg, config_file: str, key: str, values):
  """Runs of `config_file` with `key` set to each of `values`, on the chosen domains.

  Config string: domains=all|<domain>, size=default, seeds=3.
  """
  args = choices.parse_arg(arg, domains="all", size="default", seeds=3)
  shared = shared_overrides(args.seeds, args.size)
  return [(config_file, f"domain={domain},size={args.size}",
           fit_smoke(config_file, f"domain={domain},size={args.size}",
                     dict(shared, **{key: value}), args.size))
          for domain in domains(args.domains) for value in values]
