"""Synthetic reasoning domains with exact rewards and strategy labels.

  env, params = envs.make("multiplication")
  problems = env.sample_problems(key, params, batch_size=8)
  reward, label = env.score(problems, responses)

Each environment satisfies `polyepo.env_api.Env`. A *domain* (the string that
configs, `make` and `envs.datasets` take) is either a registered name or a
`package.module:Class` string naming an env class anywhere on `sys.path`:

  envs.register("addition", "addition_env:Addition")   # or the class itself
  envs.make("addition")
  envs.make("addition_env:Addition")                    # no registration needed
  python -m experiments.synthetic --config=configs/grpo.py:domain=addition_env:Addition

Modules are imported lazily so that `import envs` stays cheap.
"""

import importlib
import re
from typing import Tuple, Union

_REGISTRY = {
    "multiplication": "envs.multiplication:Multiplication",
    "polynomial_roots": "envs.polynomial_roots:PolynomialRoots",
}

NAMES = tuple(_REGISTRY)
"""The domains shipped in `envs/` (`names()` adds those registered since)."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_TARGET = re.compile(rf"({_DOTTED}):({_DOTTED})")


def names() -> Tuple[str, ...]:
  """Every registered domain name: the shipped ones (`NAMES`), then `register`'s."""
  return tuple(_REGISTRY)


def _spec(target) -> str:
  """'package.module:Class' of a class or of a target string."""
  return target if isinstance(target, str) else f"{target.__module__}:{target.__qualname__}"


def register(name: str, target: Union[str, type]) -> None:
  """Registers an env class under `name`, for `make`, `get_class` and the configs.

  Registering a name again with the same target does nothing, so a module may
  register its domain when imported.

  Args:
    name: the domain name, letters, digits and `_` (it names directories and
      datasets as it is).
    target: the env class, or a 'package.module:Class' string (imported on first
      use, which keeps the registering module cheap to import).

  Raises:
    ValueError: naming a bad name or target, or a name already registered with
      another target.
  """
  if not isinstance(name, str) or not _NAME.fullmatch(name):
    raise ValueError(f"Domain name {name!r} must be letters, digits and _ (not starting "
                     "with a digit); a 'package.module:Class' domain needs no registration.")
  if isinstance(target, str):
    if not _TARGET.fullmatch(target):
      raise ValueError(f"Domain {name!r}: target {target!r} is not 'package.module:Class'.")
  elif not isinstance(target, type):
    raise ValueError(f"Domain {name!r}: target {target!r} is neither a class nor a "
                     "'package.module:Class' string.")
  old = _REGISTRY.get(name, target)
  same = old is target or (_spec(old) == _spec(target)  # one of them a string
                           and (isinstance(old, str) or isinstance(target, str)))
  if not same:
    raise ValueError(f"Domain {name!r} is already registered as {_spec(old)}; "
                     f"cannot register it again as {_spec(target)}.")
  _REGISTRY[name] = target


def _unknown(domain) -> ValueError:
  return ValueError(f"Unknown environment {domain!r}; valid choices: {', '.join(names())}, "
                    "or 'package.module:Class'.")


def is_domain(domain) -> bool:
  """Whether `domain` has the form of a domain: a registered name or
  'package.module:Class' (the class is not imported)."""
  return isinstance(domain, str) and (domain in _REGISTRY or bool(_TARGET.fullmatch(domain)))


def target(domain: str) -> str:
  """The 'package.module:Class' that `domain` names (nothing is imported).

  Raises:
    ValueError: listing the registered names if `domain` is neither.
  """
  if domain in _REGISTRY:
    return _spec(_REGISTRY[domain])
  if is_domain(domain):
    return domain
  raise _unknown(domain)


def _import(domain: str, spec: str):
  module_name, class_name = spec.split(":")
  try:
    value = importlib.import_module(module_name)
  except Exception as err:  # pylint: disable=broad-except
    first = (str(err).strip().splitlines() or [""])[0]
    raise ValueError(f"Domain {domain!r}: cannot import module {module_name!r} "
                     f"({type(err).__name__}: {first}); is its directory on PYTHONPATH?"
                     ) from err
  for part in class_name.split("."):
    if not hasattr(value, part):
      raise ValueError(f"Domain {domain!r}: module {module_name!r} has no {class_name!r}.")
    value = getattr(value, part)
  if not isinstance(value, type):
    raise ValueError(f"Domain {domain!r}: {spec} is a {type(value).__name__}, not a class.")
  return value


def get_class(domain: str):
  """The environment class of `domain` (a registered name or 'package.module:Class').

  Raises:
    ValueError: one line naming `domain`: unknown (with the valid choices), a
      module that does not import, or a class it does not define.
  """
  registered = _REGISTRY.get(domain) if isinstance(domain, str) else None
  if isinstance(registered, type):
    return registered
  return _import(domain, target(domain))


def make(domain: str, **static):
  """Builds environment `domain` with shape-fixing `static` arguments.

  Returns:
    (env, params): the stateless env object and its default numeric params.
  """
  env = get_class(domain)(**static)
  return env, env.default_params()


def slug(domain: str) -> str:
  """`domain` as a file-system and dataset-safe name: a registered name as it
  is, 'package.module:Class' with its `:` as `-` ('addition_env-Addition').

  Distinct domains get distinct slugs (a registered name has no `-` or `.`).

  Raises:
    ValueError: listing the registered names if `domain` is neither form.
  """
  return target(domain).replace(":", "-") if domain not in _REGISTRY else domain
