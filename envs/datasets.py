"""Fixed evaluation problem sets as TFDS datasets (array_record, no TensorFlow).

Every run is evaluated on the same problems: for each domain (a registered
name, or a 'package.module:Class' env defined anywhere, stored under
`envs.slug(domain)`), three splits are drawn once with a fixed seed and stored
with TFDS:

* `validation` and `test`: the training distribution (`env.default_params()`)
  restricted to the exercises `polyepo.splits` holds out of training by a
  hash of each problem's class (`env.canonical_form`: every problem a model
  could answer from another, b * a and (a/2) * (2b) with a * b, p(-x) and
  x * q(x) with q), so no evaluation exercise is ever trained on in any
  surface form; `validation` picks settings, `test` reports them;
* `ood`: `env.ood_params()`, a shift each domain names (products only two
  large factors make; a root beyond the training range), other exercises than
  `test`'s and training's.

Each split is `SPLIT_SIZE` distinct exercises, one problem each, drawn without
replacement (`polyepo.splits.distinct`).

  problems = envs.datasets.load_split("multiplication", "ood")  # numpy pytree
  reward, label = env.score(problems, responses)

The datasets are built on first use into `data_dir` (argument, else the
`POLYEPO_DATA_DIR` environment variable, else `~/.cache/polyepo/tfds`) with
`file_format="array_record"` and read back with `builder.as_data_source()`:
TensorFlow is not needed (`tfds.load`, TFRecord files and the `tfds build` CLI
would need it, so they are not used). Each leaf of the problems pytree is stored
as a fixed-shape feature named after its path; the pytree is rebuilt from the
structure of `env.sample_problems`.
"""

import contextlib
import dataclasses
import io
import logging
import os
import re
import sys
from typing import Optional

import jax
import numpy as np
import tensorflow_datasets as tfds

import envs
from polyepo.evaluation import splits


DEFAULT_DATA_DIR = "~/.cache/polyepo/tfds"


def data_dir_or_default(data_dir: Optional[str] = None) -> str:
  """`data_dir`, else $POLYEPO_DATA_DIR, else ~/.cache/polyepo/tfds (expanded)."""
  data_dir = data_dir or os.environ.get("POLYEPO_DATA_DIR") or DEFAULT_DATA_DIR
  return os.path.expanduser(data_dir)


SPLIT_SIZE = 256
"""Exercises per eval split, each a different exercise (`polyepo.splits.distinct`):
every split of both domains holds at least 300, so 256 are drawn without
replacement; a run evaluates on the first `eval_num_problems` of them."""


@dataclasses.dataclass(eq=False)
class ProblemsConfig(tfds.core.BuilderConfig):
  """Which env and how many problems of each split, from which seed."""
  env_name: str = "multiplication"
  size: int = SPLIT_SIZE
  seed: int = 0


def _config(env_name, size, seed) -> ProblemsConfig:
  """The builder config of domain `env_name` (a registered name or
  'package.module:Class'); its name, a directory, uses `envs.slug(env_name)`."""
  return ProblemsConfig(  # envs.slug: ValueError listing the choices for an unknown one
      name=f"{envs.slug(env_name)}-{size}-seed{seed}",
      description=f"{env_name}: {size} problems per split, seed {seed}.",
      env_name=env_name, size=size, seed=seed)


def _leaf_names(tree):
  """Feature name of each leaf of `tree`, from its path (`a`, `coeffs`, ...)."""
  paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(tree)[0]]
  names = [re.sub(r"[^0-9a-zA-Z]+", "_", p).strip("_") or f"leaf{i}" for i, p in enumerate(paths)]
  if len(set(names)) != len(names):
    names = [f"leaf{i:02d}_{n}" for i, n in enumerate(names)]
  return names


def sample_split(env_name: str, split: str, size: int = SPLIT_SIZE, seed: int = 0):
  """The problems of `split`: a pytree of numpy arrays with leading axis `size`,
  one problem of each of `size` distinct exercises (`polyepo.splits.distinct`).
  Deterministic: the same (env, split, size, seed) always gives the same problems.

  Raises:
    RuntimeError: if the split holds fewer than `size` exercises.
  """
  env, _ = envs.make(env_name)
  params = env.ood_params() if split == "ood" else env.default_params()
  key = jax.random.fold_in(jax.random.PRNGKey(seed), splits.EVAL_SPLITS.index(split))
  return splits.distinct(env, key, params, size, split)


class SyntheticProblems(tfds.core.GeneratorBasedBuilder):
  """Fixed `test` / `ood` problem sets of a synthetic domain (see module doc)."""

  VERSION = tfds.core.Version("4.0.0")
  RELEASE_NOTES = {"1.0.0": "Initial release.",
                   "2.0.0": "A validation split; validation and test held out of training "
                            "by problem hash; ood disjoint from training.",
                   "3.0.0": "Held out by exercise (env.canonical_form), not surface form; "
                            "ood restricted to the test exercises.",
                   "4.0.0": "Held out by class (every symmetry of an exercise: multiplication "
                            "by the product, polynomial roots with a cubic's zero root "
                            "removed and p(-x) with p); ood other exercises than test; "
                            "distinct exercises, drawn without replacement."}
  BUILDER_CONFIGS = [_config(name, SPLIT_SIZE, 0) for name in envs.NAMES]
  # Nothing is downloaded, so there is no checksums file. Saying so also skips
  # `code_path`, which needs `importlib_resources` (not installed here).
  _checksums_path = None

  def _structure(self):
    cfg = self.builder_config
    env, params = envs.make(cfg.env_name)
    return jax.eval_shape(lambda key: env.sample_problems(key, params, 1),
                          jax.random.PRNGKey(0))

  def _info(self) -> tfds.core.DatasetInfo:
    shapes = self._structure()
    leaves = jax.tree.leaves(shapes)
    features = {
        name: tfds.features.Tensor(shape=leaf.shape[1:], dtype=np.dtype(leaf.dtype))
        for name, leaf in zip(_leaf_names(shapes), leaves)}
    return self.dataset_info_from_configs(
        features=tfds.features.FeaturesDict(features),
        description=__doc__.splitlines()[0],
        disable_shuffling=True)  # Keep the sampled order.

  def _split_generators(self, dl_manager):
    del dl_manager  # Nothing to download: problems are sampled.
    cfg = self.builder_config
    return {split: self._generate_examples(split, cfg.size) for split in splits.EVAL_SPLITS}

  def _generate_examples(self, split, size):
    cfg = self.builder_config
    problems = sample_split(cfg.env_name, split, size, cfg.seed)
    names = _leaf_names(problems)
    leaves = jax.tree.leaves(problems)
    for i in range(size):
      yield i, {name: leaf[i] for name, leaf in zip(names, leaves)}


@contextlib.contextmanager
def _quiet(buffer: io.StringIO):
  """Sends TFDS's prints and progress bars to `buffer` and drops its absl warnings.

  Nothing is downloaded here, so TFDS's "Downloading and preparing dataset
  Unknown size ...", its shuffling bars and its "no dataset_info.json" warning
  on a fresh directory only hide the project's own progress; `builder` says
  what it builds in one line instead (and shows `buffer` if the build fails).
  """
  absl_logger = logging.getLogger("absl")
  level = absl_logger.level
  absl_logger.setLevel(logging.ERROR)
  try:
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
      yield
  finally:
    absl_logger.setLevel(level)


def builder(env_name: str, *, data_dir: Optional[str] = None, size: int = SPLIT_SIZE,
            seed: int = 0, build: bool = True) -> SyntheticProblems:
  """The TFDS builder of `env_name`'s splits (`size` problems each), built
  (array_record) if needed."""
  config = _config(env_name, size, seed)
  if config.name in SyntheticProblems.builder_configs:
    config = config.name  # tfds refuses a custom config named like a listed one
  captured = io.StringIO()
  with _quiet(captured):
    b = SyntheticProblems(config=config, data_dir=data_dir_or_default(data_dir),
                          file_format="array_record")
    prepared = b.is_prepared()
  if build and not prepared:
    print(f"Building the {env_name} eval splits ({size} problems each of "
          f"{', '.join(splits.EVAL_SPLITS)}, seed {seed}) in {b.data_dir}; later runs reuse them.",
          flush=True)
    try:
      with _quiet(captured):
        b.download_and_prepare(file_format="array_record")
    except BaseException:
      sys.stderr.write(captured.getvalue())
      raise
  return b


def load_split(env_name: str, split: str, *, data_dir: Optional[str] = None,
               size: int = SPLIT_SIZE, seed: int = 0):
  """The problems of `split` ("validation", "test" or "ood"): a numpy pytree,
  leading axis `size`.

  Builds the dataset into `data_dir` on first use, then reads it with
  `as_data_source` (no TensorFlow).
  """
  if split not in splits.EVAL_SPLITS:
    raise ValueError(f"Unknown split {split!r}; valid choices: {', '.join(splits.EVAL_SPLITS)}.")
  b = builder(env_name, data_dir=data_dir, size=size, seed=seed)
  source = b.as_data_source(split=split)
  structure = b._structure()  # pylint: disable=protected-access
  names = _leaf_names(structure)
  rows = [source[i] for i in range(len(source))]
  leaves = [np.stack([np.asarray(r[name]) for r in rows]).astype(leaf.dtype)
            for name, leaf in zip(names, jax.tree.leaves(structure))]
  return jax.tree.unflatten(jax.tree.structure(structure), leaves)
