r"""RL post-training on a synthetic domain: GRPO, reward shaping, Poly-EPO, pass@k.

  python -m experiments.synthetic --config=configs/poly_epo.py:domain=multiplication
  python -m experiments.synthetic --config=configs/grpo.py:size=smoke --workdir=/tmp/run
  python -m experiments.synthetic --config=configs/poly_epo.py --config.algorithm.set_size=8

Pretrains (or reuses) the base model, then trains all seeds in one program and
writes the run directory (config.json, train.jsonl, eval.jsonl, tb/, checkpoints/).
An existing run directory is refused unless --resume or --overwrite is given.
A mistake on the command line (config, path, checkpoint) is one line, `error: ...`,
exit status 2, with nothing written; --verbose adds the traceback (experiments.cli).
Multi-host: call jax.distributed.initialize() before anything else (e.g. set
POLYEPO_DISTRIBUTED=1); the `data` mesh axis then spans every host's devices.
"""

import os

from absl import flags, logging
import jax
from ml_collections import config_flags

from experiments import build, cli
from polyepo.evaluation import evaluate
from polyepo.rl import loop

_CONFIG = config_flags.DEFINE_config_file("config", None, "RL config file (configs/*.py).",
                                          lock_config=True)
_WORKDIR = flags.DEFINE_string("workdir", None, "Run directory (default: runs/<name>-<domain>-<size>).")
_RESUME = flags.DEFINE_bool("resume", False, "Continue an existing run from its last checkpoint.")
_OVERWRITE = flags.DEFINE_bool("overwrite", False, "Remove what a run wrote in an existing run "
                                "directory first (a directory holding anything else is "
                                "refused).")
flags.mark_flags_as_required(["config"])


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)
  if os.environ.get("POLYEPO_DISTRIBUTED"):
    jax.distributed.initialize()
  config = _CONFIG.value
  run = build.rl_plan(config, _WORKDIR.value, resume=_RESUME.value, overwrite=_OVERWRITE.value)
  final = loop.train_and_evaluate(run)
  seeds = f"{run.settings.num_seeds} seed{'s' if run.settings.num_seeds > 1 else ''}"
  for split, result in final.items():
    print(evaluate.format_report(result["mean"], title=f"== {config.name} / {config.domain} / "
                                 f"{split} (mean of {seeds}) =="))
  print(f"run directory: {run.workdir}")


if __name__ == "__main__":
  cli.run(main)
