"""Prompts sharded over a 4-device `data` mesh give the same run as one device.

The run learns (the toy choice task, whose rewards depend on the prompt), so
the comparison covers real, reward-driven updates. What is compared: every
metric of the first two steps, which both layouts compute from the same
parameters (step 1's update is zero: the learning rate warms up from 0), among
them the loss and the gradient norm of step 2's real update, accumulated over
two micro-batches of two groups each on the four-device mesh; then both layouts
must learn the task. Parameters after updates are not compared: Adam's first
steps move each parameter by about ±lr whatever its gradient's size, so a
gradient component at rounding level (~1e-9) comes out with either sign and two
correct layouts part by lr, and a sampled token flips soon after.

It runs in a subprocess because the host-platform device count is fixed when
JAX starts (XLA_FLAGS=--xla_force_host_platform_device_count=4).
"""

import os
import subprocess
import sys
import textwrap

import pytest
import repo

SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, "tests/helpers")
    import jax, jax.numpy as jnp, numpy as np
    import toy_env
    from polyepo import parallel
    from polyepo.policy import model
    from polyepo.pretraining import pretrain
    from polyepo.rl import algorithms, train
    assert len(jax.devices()) == 4, jax.devices()
    env = toy_env.ChoiceEnv()
    mc = pretrain.model_config_for(env, width=32, num_layers=1, num_heads=2)
    base = model.init_params(jax.random.key(0), mc)
    config = train.TrainConfig(prompts_per_step=4, samples_per_prompt=8, num_minibatches=1,
                               microbatch_rows=16, num_steps=10, steps_per_chunk=10,
                               learning_rate=1e-2, warmup_steps=1, kl_coef=0.1)
    algorithm = algorithms.resolve(dict(name="set_rl", objective="polychromic", set_size=4))
    keys = jnp.zeros((2, 2), jnp.uint32).at[1, 1].set(7)
    mesh = parallel.make_mesh(0, config.prompts_per_step)
    assert mesh is not None and mesh.shape["data"] == 4
    start = float(toy_env.expected_reward(base, mc).mean())
    results = []
    for m in (None, mesh):
      init, run_chunk = train.make_train(config, algorithm, mc, env, {}, num_seeds=2, mesh=m)
      state, metrics = run_chunk(init(base, keys), base)
      final = jax.vmap(lambda p: toy_env.expected_reward(p, mc).mean())(state.params)
      assert (final > start + 0.2).all(), (m, start, final)  # both layouts learn
      results.append(jax.tree.map(lambda x: np.asarray(x)[:, :2], metrics))
    one, four = results
    assert (four["grad_norm"][:, 1] > 1e-2).all() and (four["advantage_std"] > 0).any()
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6), one, four)
    print("SHARDED-OK", start, final)
""")


@pytest.mark.slow
def test_four_devices_match_one_device():
  env = dict(os.environ, JAX_PLATFORMS="cpu",
             XLA_FLAGS=os.environ["XLA_FLAGS"] + " --xla_force_host_platform_device_count=4")
  root = repo.ROOT
  result = subprocess.run([sys.executable, "-c", SCRIPT], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600)
  assert "SHARDED-OK" in result.stdout, result.stdout[-3000:] + result.stderr[-3000:]
