r"""Pretrain (or reuse) the base model and report what it knows.

  python -m experiments.pretrain --config=configs/pretrain.py:domain=multiplication

The base model is the shipped one of this config if there is one
(experiments.build.shipped_base_model; --config.shipped=false pretrains), else
cached under a key derived from the config (see polyepo.pretrain.base_model;
a pretraining that is stopped resumes when the same command is run again); the
report (pass@k, strategy shares and accuracy, forced-strategy accuracy,
distinct strategies on the TFDS `validation`, `test` and `ood` splits; forced
accuracy on training problems beside validation's, to tell learning from
memorising) is printed
with the testbed's targets (`targets`) and saved as report.json next to the
checkpoint (a shipped model keeps its committed one). A mistake on the command
line (config, path, checkpoint) is one line, `error: ...`, exit status 2;
--verbose adds the traceback (experiments.cli).
"""

import json
import math
import os
from typing import Any, Dict, List, Sequence, Tuple

from absl import flags, logging
from ml_collections import config_flags

from experiments import build, cli
from polyepo.evaluation import evaluate

_CONFIG = config_flags.DEFINE_config_file("config", None, "Pretraining config file.",
                                          lock_config=True)
flags.mark_flags_as_required(["config"])


COMPETENT = 0.3      # forced accuracy of a strategy the base model knows
RARE, VERY_RARE = 0.01, 0.002
TARGETS_SPLIT = "validation"
"""The split the targets are judged on: a base model is chosen on `validation`
only (`test` and `ood` report it)."""


def targets(summary: Dict[str, Any], families: Sequence[str]) -> List[Tuple[str, str, bool]]:
  """The testbed's targets for a base model (on `TARGETS_SPLIT`): (target, measured, met).

  They scale with the domain's S strategies (`len(families)`) and F distinct
  families, so that a small domain can meet them; with 8 strategies in 5 or
  more families (both shipped domains) they are 5 strategies, 3 families, 2
  rare, 1 very rare:

  * competent: at least min(5, ceil(5 S / 8)) strategies from at least
    min(3, ceil(F / 2)) families with forced accuracy >= 0.3;
  * skewed: the top strategy has >= 40% of the samples; beyond the top
    strategy and one more, a tail: at least min(2, S - 2) strategies used but
    under 1%, at least min(1, S - 2) under 0.2% (none of a domain of two);
  * pass@1 in [0.15, 0.6].

  A strategy never sampled counts as neither rare nor used. E.g. S = 3, F = 2
  (tests/helpers/addition_env.py): 2 competent strategies from 1 family, 1 strategy
  used but under 0.2% (so also under 1%).
  """
  names = list(summary["strategy_share"])[:len(families)]
  num_strategies, num_families = len(families), len(set(families))
  want_competent = min(5, math.ceil(5 * num_strategies / 8))
  want_families = min(3, math.ceil(num_families / 2))
  want_rare = max(0, min(2, num_strategies - 2))
  want_very_rare = max(0, min(1, num_strategies - 2))
  forced_acc = summary.get("forced_accuracy", {})
  competent = [n for n in names if (forced_acc.get(n) or 0) >= COMPETENT]
  competent_families = {families[names.index(n)] for n in competent}
  shares = {n: summary["strategy_share"][n] for n in names}
  rare = [n for n in names if 0 < shares[n] < RARE]
  very_rare = [n for n in names if 0 < shares[n] < VERY_RARE]
  top = max(shares.values())
  pass1 = summary["pass_at_k"][1]
  return [
      (f"competent: >= {want_competent} strategies, >= {want_families} families with "
       f"forced accuracy >= {COMPETENT}",
       f"{len(competent)} strategies, {len(competent_families)} families",
       len(competent) >= want_competent and len(competent_families) >= want_families),
      ("skewed: top share >= 40%", f"{top:.1%}", top >= 0.4),
      (f"skewed: >= {want_rare} strategies used but under 1%", ", ".join(rare) or "none",
       len(rare) >= want_rare),
      (f"skewed: >= {want_very_rare} strategy used but under 0.2%",
       ", ".join(very_rare) or "none", len(very_rare) >= want_very_rare),
      ("pass@1 in [0.15, 0.6]", f"{pass1:.3f}", 0.15 <= pass1 <= 0.6),
  ]


def format_targets(rows) -> str:
  return "\n".join(f"{'met' if ok else 'MISSED':>6}  {target}: {value}"
                    for target, value, ok in rows)


def format_memorisation(train: Dict[str, Any], held: Dict[str, Any],
                        split: str = TARGETS_SPLIT) -> str:
  """Forced accuracy per strategy on training vs `split`'s problems, side by side."""
  cell = lambda x: f"{'–':>8}" if x is None else f"{x:>8.3f}"
  lines = [f"== forced accuracy: training vs {split} problems (a large gap: memorised) ==",
           f"{'strategy':<24}{'train':>8}{split[:10]:>12}"]
  lines += [f"{name:<24}{cell(train[name])}{cell(held.get(name)):>12}" for name in train]
  return "\n".join(lines)


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)
  config = _CONFIG.value
  env, model_config, params, directory = build.base_model(config)
  print(f"base model: {build.describe_base_model(directory)}")
  results = build.base_report(config, env, model_config, params)
  for split in config.report.splits:
    print(evaluate.format_report(results[split], title=f"== {config.domain} / {split} =="))
  if TARGETS_SPLIT in results:
    held = results[TARGETS_SPLIT]
    print(format_memorisation(results["train"]["forced_accuracy"], held["forced_accuracy"]))
    print(f"== targets ({TARGETS_SPLIT}) ==\n"
          + format_targets(targets(held, env.strategy_families)))
  path = os.path.join(directory, "report.json")
  if build.is_shipped(directory):  # its committed report stays as measured
    print(f"report: not saved over the shipped model's ({os.path.relpath(path)})")
    return
  with open(path, "w") as f:
    json.dump(results, f, indent=2)
  print(f"report: {path}")


if __name__ == "__main__":
  cli.run(main)
