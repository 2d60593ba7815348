r"""Pretrain (or reuse) the base model and report what it knows.

  python -m experiments.pretrain --config=configs/pretrain.py:domain=multiplication

The base model is cached under a key derived from the config (see
polyepo.pretrain.base_model); the report (pass@k, strategy shares and accuracy,
forced-strategy accuracy, distinct strategies on the TFDS `test` and `ood`
splits; forced accuracy on training problems beside test's, to tell learning
from memorising) is printed with the testbed's targets (`targets`) and saved as
report.json next to the checkpoint.
"""

import json
import os
from typing import Any, Dict, List, Sequence, Tuple

from absl import app, flags, logging
from ml_collections import config_flags

from experiments import build
from polyepo import evaluate

_CONFIG = config_flags.DEFINE_config_file("config", None, "Pretraining config file.",
                                          lock_config=True)
flags.mark_flags_as_required(["config"])


COMPETENT = 0.3      # forced accuracy of a strategy the base model knows
RARE, VERY_RARE = 0.01, 0.002


def targets(summary: Dict[str, Any], families: Sequence[str]) -> List[Tuple[str, str, bool]]:
  """The testbed's targets for a base model on `test`: (target, measured, met).

  Competent: at least 5 strategies from at least 3 families with forced
  accuracy >= 0.3; skewed: the top strategy has >= 40% of the samples, at
  least 2 strategies are used but under 1%, at least 1 under 0.2%; pass@1 in
  [0.15, 0.6]. A strategy never sampled counts as neither rare nor used.
  """
  names = list(summary["strategy_share"])[:len(families)]
  forced_acc = summary.get("forced_accuracy", {})
  competent = [n for n in names if (forced_acc.get(n) or 0) >= COMPETENT]
  competent_families = {families[names.index(n)] for n in competent}
  shares = {n: summary["strategy_share"][n] for n in names}
  rare = [n for n in names if 0 < shares[n] < RARE]
  very_rare = [n for n in names if 0 < shares[n] < VERY_RARE]
  top = max(shares.values())
  pass1 = summary["pass_at_k"][1]
  return [
      ("competent: >= 5 strategies, >= 3 families with forced accuracy >= 0.3",
       f"{len(competent)} strategies, {len(competent_families)} families",
       len(competent) >= 5 and len(competent_families) >= 3),
      ("skewed: top share >= 40%", f"{top:.1%}", top >= 0.4),
      ("skewed: >= 2 strategies used but under 1%", ", ".join(rare) or "none", len(rare) >= 2),
      ("skewed: >= 1 strategy used but under 0.2%", ", ".join(very_rare) or "none",
       len(very_rare) >= 1),
      ("pass@1 in [0.15, 0.6]", f"{pass1:.3f}", 0.15 <= pass1 <= 0.6),
  ]


def format_targets(rows) -> str:
  return "\n".join(f"{'met' if ok else 'MISSED':>6}  {target}: {value}"
                    for target, value, ok in rows)


def format_memorisation(train: Dict[str, Any], test: Dict[str, Any]) -> str:
  """Forced accuracy per strategy on training vs test problems, side by side."""
  cell = lambda x: f"{'–':>8}" if x is None else f"{x:>8.3f}"
  lines = ["== forced accuracy: training vs test problems (a large gap: memorised) ==",
           f"{'strategy':<24}{'train':>8}{'test':>8}"]
  lines += [f"{name:<24}{cell(train[name])}{cell(test.get(name))}" for name in train]
  return "\n".join(lines)


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)
  config = _CONFIG.value
  env, model_config, params, directory = build.base_model(config)
  print(f"base model: {directory}")
  results = build.base_report(config, env, model_config, params)
  for split in config.report.splits:
    print(evaluate.format_report(results[split], title=f"== {config.domain} / {split} =="))
  if "test" in results:
    print(format_memorisation(results["train"]["forced_accuracy"],
                              results["test"]["forced_accuracy"]))
    print("== targets (test) ==\n" + format_targets(targets(results["test"],
                                                            env.strategy_families)))
  with open(os.path.join(directory, "report.json"), "w") as f:
    json.dump(results, f, indent=2)
  print(f"report: {os.path.join(directory, 'report.json')}")


if __name__ == "__main__":
  app.run(main)
