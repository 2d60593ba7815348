"""polyepo.value_head: the surprise inputs worked by hand; what the head reads and
where its gradients go."""

import jax
import jax.numpy as jnp
import numpy as np

from polyepo.policy import value_head


def test_surprise_is_worked_by_hand():
  """Before each position: the lowest log-prob so far, the counts below log 0.1 and
  log 0.01, the sum; padding is not read."""
  p = np.array([[0.9, 0.05, 0.5, 0.005, 0.2]], np.float32)
  mask = np.array([[True, True, True, True, False]])
  got = np.asarray(value_head.surprise(np.log(p), mask))
  assert got.shape == (1, 5, value_head.SURPRISE_FEATURES)
  np.testing.assert_allclose(got[0, :, 0], np.log([1.0, 0.9, 0.05, 0.05, 0.005]), rtol=1e-6)
  np.testing.assert_array_equal(got[0, :, 1], [0, 0, 1, 1, 2])
  np.testing.assert_array_equal(got[0, :, 2], [0, 0, 0, 0, 1])
  np.testing.assert_allclose(got[0, :, 3], np.log([1.0, 0.9, 0.9 * 0.05, 0.9 * 0.05 * 0.5,
                                                   0.9 * 0.05 * 0.5 * 0.005]), rtol=1e-5)


def test_a_surprise_head_reads_the_features_then_the_surprise():
  width = 3
  head = value_head.init(jax.random.key(0), value_head.input_width(width, "surprise"), width)
  head["out"]["kernel"] = jnp.ones(width)
  features = jax.random.normal(jax.random.key(1), (2, 4, width))
  surprise = jax.random.normal(jax.random.key(2), (2, 4, value_head.SURPRISE_FEATURES))
  np.testing.assert_allclose(value_head.read(head, features, surprise),
                             value_head.apply(head, jnp.concatenate([features, surprise], -1)))
  assert value_head.input_width(width, "head") == value_head.input_width(width, "trunk") == width


def test_value_head_gradients_reach_the_features_only_when_asked():
  head = value_head.init(jax.random.key(0), 4)
  head["out"]["kernel"] = jnp.ones(4)
  features = jax.random.normal(jax.random.key(1), (3, 4))
  grad = lambda trainable: jax.grad(lambda f: jnp.sum(value_head.apply(
      head, f, trainable_features=trainable)))(features)
  np.testing.assert_array_equal(grad(False), 0.0)
  assert np.abs(grad(True)).sum() > 0
