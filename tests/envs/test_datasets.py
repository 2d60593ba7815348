"""Tests for envs.datasets: array_record splits built and read without TensorFlow."""

import importlib.util
import logging
import subprocess
import sys

import jax
import numpy as np
import pytest

import envs
from envs import datasets
from polyepo.evaluation import splits as polyepo_splits


def test_tensorflow_is_not_installed():
  assert importlib.util.find_spec("tensorflow") is None


@pytest.fixture(scope="module")
def splits(tmp_path_factory):
  data_dir = str(tmp_path_factory.mktemp("tfds"))
  load = lambda split: datasets.load_split(
      "multiplication", split, data_dir=data_dir, size=200, seed=3)
  return data_dir, load("test"), load("ood")


def test_splits_have_requested_sizes_and_types(splits):
  _, test, ood = splits
  assert test.a.shape == test.b.shape == (200,)
  assert ood.a.shape == (200,)
  assert test.a.dtype == np.int32
  env, _ = envs.make("multiplication")
  assert type(test) is type(env.sample_problems(jax.random.PRNGKey(0), env.default_params(), 1))


def test_splits_are_array_record_files(splits):
  data_dir, _, _ = splits
  b = datasets.builder("multiplication", data_dir=data_dir, size=200, seed=3,
                       build=False)
  files = sorted(p.name for p in b.data_path.iterdir())
  assert any("test.array_record" in f for f in files), files
  assert any("ood.array_record" in f for f in files), files
  assert any("validation.array_record" in f for f in files), files


def test_splits_are_deterministic(splits, tmp_path):
  data_dir, test, ood = splits
  # Read back from the same directory, and rebuilt from scratch elsewhere.
  again = datasets.load_split("multiplication", "test", data_dir=data_dir,
                              size=200, seed=3)
  fresh = datasets.load_split("multiplication", "ood", data_dir=str(tmp_path),
                              size=200, seed=3)
  np.testing.assert_array_equal(again.a, test.a)
  np.testing.assert_array_equal(again.b, test.b)
  np.testing.assert_array_equal(fresh.a, ood.a)
  np.testing.assert_array_equal(fresh.b, ood.b)
  # The stored problems are the sampled ones, in order.
  sampled = datasets.sample_split("multiplication", "test", 200, seed=3)
  np.testing.assert_array_equal(sampled.a, test.a)


def test_eval_problems_are_held_out_of_training(splits):
  """validation, test and ood problems share no product with training draws
  (pretraining and RL sample through `splits.sample(..., "train")`) nor with
  each other, and each split is distinct exercises."""
  data_dir, test, ood = splits
  validation = datasets.load_split("multiplication", "validation", data_dir=data_dir,
                                   size=200, seed=3)
  env, params = envs.make("multiplication")
  train = polyepo_splits.sample(env, jax.random.PRNGKey(0), params, 20_000)
  products = lambda p: set((np.asarray(p.a) * np.asarray(p.b)).tolist())
  seen = products(train)
  assert len(seen) > 750  # most of the 811 training products
  for split in (test, validation, ood):
    assert len(products(split)) == 200
    assert not seen & products(split)
  assert not products(test) & products(validation)
  assert not products(test) & products(ood)
  assert ((np.asarray(ood.a) >= 50) & (np.asarray(ood.b) >= 50)).all()


def test_a_split_larger_than_its_exercises_is_refused():
  with pytest.raises(RuntimeError, match="distinct exercises of split 'validation'"):
    datasets.sample_split("multiplication", "validation", 2000)


def test_ood_has_the_documented_shift(splits):
  _, test, ood = splits
  assert ood.a.min() >= 50 and ood.b.min() >= 50  # both factors large ...
  assert not np.any((test.a >= 50) & (test.b >= 50))  # ... never in training
  assert (ood.a * ood.b).mean() > 2 * (test.a * test.b).mean()


def test_bad_split_and_env_names(tmp_path):
  with pytest.raises(ValueError, match="valid choices"):
    datasets.load_split("multiplication", "train", data_dir=str(tmp_path))  # not an eval split
  with pytest.raises(ValueError, match="valid choices"):
    datasets.load_split("addition", "test", data_dir=str(tmp_path))


def test_data_dir_from_environment(monkeypatch, tmp_path):
  monkeypatch.setenv("POLYEPO_DATA_DIR", str(tmp_path))
  assert datasets.data_dir_or_default() == str(tmp_path)
  monkeypatch.delenv("POLYEPO_DATA_DIR")
  assert datasets.data_dir_or_default().endswith(".cache/polyepo/tfds")
  assert datasets.data_dir_or_default("/x") == "/x"


def test_loading_does_not_import_tensorflow(splits):
  data_dir, _, _ = splits
  code = ("import sys, envs.datasets as d; "
          f"d.load_split('multiplication', 'ood', data_dir={data_dir!r}, "
          "size=200, seed=3); "
          "assert 'tensorflow' not in sys.modules, 'tensorflow imported'")
  subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


@pytest.mark.slow
def test_building_says_what_it_builds_once_and_nothing_else(tmp_path, capfd, caplog):
  """No TFDS "Downloading and preparing ... Unknown size", progress bars or absl
  warnings: one line the first time, nothing when the splits already exist."""
  kwargs = dict(data_dir=str(tmp_path), size=8, seed=3)
  caplog.set_level(logging.INFO)
  datasets.load_split("multiplication", "test", **kwargs)
  assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
  first = capfd.readouterr()
  assert first.out.count("Building the multiplication eval splits (8 problems each") == 1
  text = first.out + first.err
  assert "Downloading" not in text and "Shuffling" not in text and "%" not in text, text
  datasets.load_split("multiplication", "ood", **kwargs)
  again = capfd.readouterr()
  assert "Building" not in again.out + again.err


def test_a_domain_outside_envs_gets_its_splits_under_its_slug(tmp_path):
  """tests/helpers/addition_env.py named by `package.module:Class`: its splits are built
  under `envs.slug` ('addition_env-Addition') and hold out their problems."""
  test = datasets.load_split("addition_env:Addition", "test", data_dir=str(tmp_path), size=16)
  assert test.a.shape == (16,) and ((10 <= np.asarray(test.a)) & (test.a <= 69)).all()
  env, _ = envs.make("addition_env:Addition")
  assert np.asarray(polyepo_splits.in_split(env, test, "test")).all()
  assert (tmp_path / "synthetic_problems" / "addition_env-Addition-16-seed0").is_dir()
  np.testing.assert_array_equal(
      test.b, datasets.sample_split("addition_env:Addition", "test", 16).b)


def test_an_unknown_domain_lists_the_choices(tmp_path):
  with pytest.raises(ValueError, match="Unknown environment 'chess'; valid choices: "
                     "multiplication, polynomial_roots"):
    datasets.load_split("chess", "test", data_dir=str(tmp_path))
