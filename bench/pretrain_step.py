r"""Seconds per pretraining step, each stage, with and without the length cuts.

  python -m bench.pretrain_step [--domain multiplication] [--repeats 5] [--steps 5]

Pretraining reads each micro-batch's responses only up to its last trained
token, rounded up to `corpus.LENGTH_STEP` (`corpus.part_value_and_grad`),
after grouping rows of similar length into the same micro-batch
(`corpus.length_order`). This times a chunk of `--steps` steps of the
domain's default config, each stage, with those cuts and with every response
read whole (`corpus.cut_lengths` returning T alone), in turn in one process,
and prints the medians, their ratio and the estimated time of the whole
pretraining run (steps times seconds per step, compilation left out).
"""

import argparse
import contextlib
import dataclasses
import unittest.mock

import jax

from bench import timing
from configs import pretrain as pretrain_configs
from experiments import build
from polyepo import accumulation
from polyepo.pretraining import corpus, pretrain


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--domain", default="multiplication",
                      choices=["multiplication", "polynomial_roots"])
  parser.add_argument("--repeats", type=int, default=5, help="timed chunks per variant")
  parser.add_argument("--steps", type=int, default=5, help="steps per chunk")
  args = parser.parse_args(argv)

  config = pretrain_configs.get_config(f"domain={args.domain}")
  env, env_params, model_config, settings = build.pretrain_settings(config)
  settings = dataclasses.replace(settings, steps_per_chunk=args.steps)
  whole_responses = unittest.mock.patch.object(corpus, "cut_lengths", lambda t: (t,))
  rows = settings.microbatch_rows or accumulation.default_microbatch_rows(
      settings.batch_size, corpus.CPU_MICROBATCH_ROWS)
  print(f"{args.domain}, {jax.devices()[0].device_kind}, batches of {settings.batch_size} in "
        f"micro-batches of {rows} rows; seconds per step "
        f"(median of {args.repeats} chunks of {args.steps} steps):")
  total = {"whole": 0.0, "cut": 0.0}
  for stage, spec in pretrain.stages(settings).items():
    chunks = {}
    for variant in ("whole", "cut"):
      with whole_responses if variant == "whole" else contextlib.nullcontext():
        init, run_chunk = pretrain.make_pretrain(settings, model_config, env, env_params, stage)
        state = init(jax.random.key(0))
        jax.block_until_ready(run_chunk(state))  # compiled while any patch holds
      chunks[variant] = lambda run_chunk=run_chunk, state=state: run_chunk(state)
    seconds = timing.interleaved_median_seconds(chunks, args.repeats)
    per_step = {k: v / args.steps for k, v in seconds.items()}
    for k, v in per_step.items():
      total[k] += v * spec.num_steps
    print(f"  {stage:<10}  whole responses {per_step['whole'] * 1e3:6.0f} ms   cut "
          f"{per_step['cut'] * 1e3:6.0f} ms   {per_step['whole'] / per_step['cut']:.2f}x "
          f"({spec.num_steps} steps)")
  print(f"  whole run   whole responses {total['whole'] / 60:5.1f} min   cut "
        f"{total['cut'] / 60:5.1f} min   {total['whole'] / total['cut']:.2f}x")


if __name__ == "__main__":
  main()
