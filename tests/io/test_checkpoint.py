"""Parameters saved on one device load on another (polyepo.checkpoint).

A base model pretrained on a CPU must load where training runs, a GPU say.
Orbax records each array's device; restoring without a target sharding asks for
that device again and fails where it does not exist ("Device cpu:0 was not found"
on a GPU). On a CPU the same failure shows with host devices: a process with two
saves onto its second device, cpu:1, and a process with one restores. Params
that do not fit the model asked for are refused naming their directory.
"""

import os
import re
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from polyepo.io import checkpoint
import repo

SAVE = textwrap.dedent("""
    import sys
    import jax, jax.numpy as jnp
    from polyepo.io import checkpoint
    second = jax.devices()[1]
    params = {"w": jax.device_put(jnp.arange(6.0).reshape(2, 3), second),
              "b": jax.device_put(jnp.full((3,), 0.5, jnp.bfloat16), second)}
    checkpoint.save_params(sys.argv[1], params)
""")

LOAD = textwrap.dedent("""
    import sys
    import jax, jax.numpy as jnp, numpy as np
    from polyepo.io import checkpoint
    assert len(jax.devices()) == 1, jax.devices()
    abstract = {"w": jax.ShapeDtypeStruct((2, 3), jnp.float32),
                "b": jax.ShapeDtypeStruct((3,), jnp.bfloat16)}
    params = checkpoint.load_params(sys.argv[1], abstract)
    assert params["w"].devices() == {jax.devices()[0]}
    np.save(sys.argv[2], np.asarray(params["w"]))
    np.save(sys.argv[3], np.asarray(params["b"], np.float32))
""")


def _python(script, device_count, *args):
  env = dict(os.environ, JAX_PLATFORMS="cpu",
             XLA_FLAGS=os.environ["XLA_FLAGS"]
             + f" --xla_force_host_platform_device_count={device_count}")
  root = repo.ROOT
  result = subprocess.run([sys.executable, "-c", script, *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]


def test_params_saved_on_a_device_this_process_lacks_load_on_its_own(tmp_path):
  _python(SAVE, 2, str(tmp_path / "model"))
  w, b = tmp_path / "w.npy", tmp_path / "b.npy"
  _python(LOAD, 1, str(tmp_path / "model"), str(w), str(b))
  np.testing.assert_array_equal(np.load(w), np.arange(6.0).reshape(2, 3))
  np.testing.assert_array_equal(np.load(b), np.full((3,), 0.5))


@pytest.mark.parametrize("abstract", [
    {"w": jax.ShapeDtypeStruct((4, 3), jnp.float32)},                    # another shape
    {"w": jax.ShapeDtypeStruct((2, 3), jnp.float32),
     "b": jax.ShapeDtypeStruct((3,), jnp.float32)},                       # another tree
], ids=["shape", "tree"])
def test_params_that_do_not_fit_are_refused_naming_the_directory(abstract, tmp_path):
  directory = str(tmp_path / "model")
  checkpoint.save_params(directory, {"w": jnp.zeros((2, 3))})
  with pytest.raises(ValueError, match=f"^The parameters saved under {re.escape(repr(directory))} do not fit "
                     r"this model \(.+\): were they saved for a model of another size\?$"):
    checkpoint.load_params(directory, abstract)
  restored = checkpoint.load_params(directory, {"w": jax.ShapeDtypeStruct((2, 3), jnp.float32)})
  np.testing.assert_array_equal(restored["w"], np.zeros((2, 3)))
