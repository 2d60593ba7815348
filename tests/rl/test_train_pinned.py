"""Same seed, same numbers: every algorithm's first steps against values pinned
before the algorithms were values (`polyepo.rl.algorithms`), and before that
before a registry replaced the estimator branches of `make_train`.

A regression pin, not a correctness test (correctness is tested against hand-worked
values, brute force and learning in the other tests): it fails if a refactor moves
any number of a run. `tests/pins/train_pinned.json` holds each run's numbers as the
estimator branches of `make_train` produced them, before the registry existed, except
"poly_ppo_multiplication", recorded later under `DigitParity`'s reward: under the exact
reward the untrained model earned nothing, so every pinned number was 0 and no change to
the estimator could move it, and re-recorded when multiplication's training problems
became those held out by product (`polyepo.splits`: other prompts, other numbers).
`PYTHONPATH=.:tests/helpers python tests/rl/test_train_pinned.py` rewrites every entry
from the current code, and with run names (e.g. `poly_ppo_multiplication`) only those;
do it only for a change meant to move the numbers.
The tolerance allows float rounding between CPUs, nothing more: the runs are
computed in a subprocess under XLA's default optimisation, as they were recorded
(the tests compile with LLVM's optimisation off, tests/conftest.py, which moves
these numbers by up to 7e-4).
"""

import dataclasses
import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import toy_env
from envs.multiplication import Multiplication
from polyepo.policy import model
from polyepo.pretraining import pretrain
from polyepo.rl import algorithms, train
import repo

PINNED = os.path.join(repo.PINS, "train_pinned.json")
BASE = train.TrainConfig(prompts_per_step=4, samples_per_prompt=6, num_minibatches=2,
                         num_steps=3, steps_per_chunk=3, learning_rate=1e-2, warmup_steps=1)
SETS = dict(set_size=3)   # every set algorithm's n
# name -> (config.algorithm, TrainConfig fields besides BASE's)
RUNS = {
    "grpo": (dict(name="grpo"), {}),
    "dr_grpo": (dict(name="grpo", normalize=False), {}),
    "grpo_kl": (dict(name="grpo"), dict(kl_coef=0.1, temperature=0.8)),
    "reward_shaping": (dict(name="reward_shaping", lam=0.5), {}),
    "poly_epo": (dict(name="set_rl", **SETS), {}),
    "poly_epo_batch": (dict(name="set_rl", normalize_over="batch", **SETS), {}),
    "poly_epo_sampled": (dict(name="set_rl", num_subsets=3, objective="srl", **SETS), {}),
    "ppo": (dict(name="ppo"), {}),
    "poly_ppo": (dict(name="poly_ppo", vines=dict(num_states=1, samples=4), **SETS), {}),
    "poly_ppo_no_vines": (dict(name="poly_ppo", vines=dict(num_states=0), **SETS), {}),
    # The toy env's one-token responses have no step boundary to grow vines from.
    "poly_ppo_multiplication": (dict(name="poly_ppo", vines=dict(num_states=2, samples=4),
                                     **SETS), {}),
}
SCALARS = ("reward", "loss", "grad_norm", "advantage_std", "pass_at_1")


class DigitParity(Multiplication):
  """Multiplication, rewarded 1 for an odd number of digits before EOS: a reward an
  untrained model earns about half the time, which depends on the whole response
  (so vines from later states return differently)."""

  def _score(self, problems, responses):
    _, label = super()._score(problems, responses)
    before_eos = jnp.cumsum(responses == self.eos_id, axis=1) == 0
    digits = jnp.sum((responses <= 9) & before_eos, axis=1)
    return (digits % 2).astype(jnp.float32), label


def run(name):
  """{metric: [steps] floats} and the final parameters' sum of |x| for RUNS[name]."""
  env = DigitParity() if name.endswith("multiplication") else toy_env.ChoiceEnv()
  mc = pretrain.model_config_for(env, width=32, num_layers=1, num_heads=2)
  base = model.init_params(jax.random.key(0), mc)
  spec, fields = RUNS[name]
  init, run_chunk = train.make_train(dataclasses.replace(BASE, **fields),
                                     algorithms.resolve(spec), mc, env, env.default_params(),
                                     num_seeds=1)
  state, metrics = run_chunk(init(base, jnp.array([[3, 4]], jnp.uint32)), base)
  out = {k: np.asarray(metrics[k][0], np.float64).tolist() for k in SCALARS}
  out["params_abs_sum"] = float(sum(jnp.sum(jnp.abs(x)) for x in jax.tree.leaves(state.params)))
  return out


def default_optimisation_env():
  """The environment with tests/conftest.py's optimisation flag taken out, and the
  paths pytest adds (pytest.ini)."""
  flags = [f for f in os.environ.get("XLA_FLAGS", "").split()
           if not f.startswith("--xla_backend_optimization_level")]
  return dict(os.environ, XLA_FLAGS=" ".join(flags), JAX_PLATFORMS="cpu",
              PYTHONPATH=os.pathsep.join([repo.ROOT,
                                          os.path.join(repo.ROOT, "tests", "helpers")]))


def run_in_subprocess(name):
  """run(name), computed in a subprocess under XLA's default optimisation."""
  result = subprocess.run([sys.executable, os.path.abspath(__file__), "--print", name],
                          cwd=repo.ROOT, env=default_optimisation_env(), capture_output=True,
                          text=True, timeout=900)
  assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
  return json.loads(result.stdout.splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("name", list(RUNS))
def test_same_seed_gives_the_pinned_numbers(name):
  with open(PINNED) as f:
    pinned = json.load(f)[name]
  got = run_in_subprocess(name)
  for key, value in pinned.items():
    np.testing.assert_allclose(got[key], value, rtol=2e-4, atol=1e-5, err_msg=key)


if __name__ == "__main__":
  if sys.argv[1:2] == ["--print"]:   # one run's numbers, as one line of JSON
    print(json.dumps(run(sys.argv[2])))
    sys.exit(0)
  names = sys.argv[1:] or list(RUNS)
  with open(PINNED) as f:
    pins = json.load(f) if sys.argv[1:] else {}
  pins.update({name: run(name) for name in names})
  with open(PINNED, "w") as f:
    json.dump({name: pins[name] for name in RUNS}, f, indent=1)
    f.write("\n")
