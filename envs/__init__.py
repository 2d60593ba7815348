"""Synthetic reasoning domains with exact rewards and strategy labels.

  env, params = envs.make("multiplication")
  problems = env.sample_problems(key, params, batch_size=8)
  reward, label = env.score(problems, responses)

Each environment satisfies `polyepo.env_api.Env`. Modules are imported lazily so
that `import envs` stays cheap.
"""

import importlib

_REGISTRY = {
    "multiplication": "envs.multiplication:Multiplication",
    "polynomial_roots": "envs.polynomial_roots:PolynomialRoots",
}

NAMES = tuple(_REGISTRY)


def get_class(name: str):
  """The environment class registered under `name`."""
  if name not in _REGISTRY:
    raise ValueError(
        f"Unknown environment {name!r}; valid choices: {', '.join(NAMES)}.")
  module_name, class_name = _REGISTRY[name].split(":")
  return getattr(importlib.import_module(module_name), class_name)


def make(name: str, **static):
  """Builds environment `name` with shape-fixing `static` arguments.

  Returns:
    (env, params): the stateless env object and its default numeric params.
  """
  env = get_class(name)(**static)
  return env, env.default_params()
