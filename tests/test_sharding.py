"""Prompts sharded over a 4-device `data` mesh give the same run as one device.

Runs in a subprocess because the host-platform device count is fixed when JAX
starts (XLA_FLAGS=--xla_force_host_platform_device_count=4).
"""

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import jax, jax.numpy as jnp, numpy as np
    import envs
    from experiments.synthetic import make_mesh
    from polyepo import model, pretrain, train
    assert len(jax.devices()) == 4, jax.devices()
    env, params = envs.make("multiplication")
    mc = pretrain.model_config_for(env, width=32, num_layers=1, num_heads=2)
    base = model.init_params(jax.random.key(0), mc)
    config = train.TrainConfig(prompts_per_step=4, samples_per_prompt=4, set_size=2,
                               num_steps=2, steps_per_chunk=2, kl_coef=0.5)
    keys = jnp.zeros((2, 2), jnp.uint32).at[1, 1].set(7)
    mesh = make_mesh(0, config.prompts_per_step)
    assert mesh is not None and mesh.shape["data"] == 4
    results = []
    for m in (None, mesh):
      init, run_chunk = train.make_train(config, mc, env, params, num_seeds=2, mesh=m)
      state, metrics = run_chunk(init(base, keys), base)
      results.append((state.params, metrics))
    (p1, m1), (p4, m4) = results
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6), m1, m4)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6), p1, p4)
    print("SHARDED-OK")
""")


def test_four_devices_match_one_device():
  env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4",
             JAX_PLATFORMS="cpu")
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  result = subprocess.run([sys.executable, "-c", SCRIPT], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600)
  assert "SHARDED-OK" in result.stdout, result.stdout[-3000:] + result.stderr[-3000:]
