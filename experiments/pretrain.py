r"""Pretrain (or reuse) the base model and report what it knows.

  python -m experiments.pretrain --config=configs/pretrain.py:domain=multiplication

The base model is cached under a key derived from the config (see
polyepo.pretrain.base_model); the report (pass@k, strategy shares and accuracy,
distinct strategies on the TFDS `test` and `ood` splits) is printed and saved as
report.json next to the checkpoint.
"""

import json
import os

from absl import app, flags, logging
from ml_collections import config_flags

from experiments import build
from polyepo import evaluate

_CONFIG = config_flags.DEFINE_config_file("config", None, "Pretraining config file.",
                                          lock_config=True)
flags.mark_flags_as_required(["config"])


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)
  config = _CONFIG.value
  env, model_config, params, directory = build.base_model(config)
  print(f"base model: {directory}")
  results = build.base_report(config, env, model_config, params)
  for split, summary in results.items():
    print(evaluate.format_report(summary, title=f"== {config.domain} / {split} =="))
  with open(os.path.join(directory, "report.json"), "w") as f:
    json.dump(results, f, indent=2)
  print(f"report: {os.path.join(directory, 'report.json')}")


if __name__ == "__main__":
  app.run(main)
