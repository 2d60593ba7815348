"""RL algorithms as values, built by factories that take their own hyperparameters.

  grpo(normalize, normalize_over)                       group-standardised rewards
  reward_shaping(lam, normalize, normalize_over)        + λ x a rarity bonus
  set_rl(objective, set_size, num_subsets, normalize, normalize_over)
                                                        Poly-EPO (objective="polychromic")
  windowed(first, rest)                                 `first` on each response's first
                                                        reasoning step, `rest` after it
  ppo(critic, gae, normalize)                           GAE from a critic
  poly_ppo(objective, set_size, num_subsets, vines, critic, gae, normalize)
                                                        set advantages at rollout states,
                                                        GAE elsewhere

Each returns an `Algorithm`, which `polyepo.rl.train.make_train` takes as it
is: the shared settings of a run (batch, optimiser, loss clipping, steps) are
`TrainConfig`'s, an algorithm's own are bound in its value. A run's config
names one in a sub-dict, `config.algorithm`: its `name` (a `REGISTRY` name or
'package.module:ATTRIBUTE' naming a factory outside the package) and the
factory's keywords; a keyword that is itself a mapping with a `name` is an
algorithm too (windowed's `first` and `rest`), other mappings are a part's
fields (`polyepo.rl.parts`). `resolve` builds the value once; `spec` writes
the full sub-dict of a name with every default (configs/base.py).

Adding an algorithm is one factory (`register` it here, or keep it in a module
of your own) and one config that names it (docs/adding-an-algorithm.md).
"""

import dataclasses
import importlib
import inspect
import re
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, Union

import jax

from polyepo import checks
from polyepo.core import advantages as adv_lib
from polyepo.rl import estimators, parts, ppo_batch
from polyepo.rl.estimator_inputs import check_objective, check_sets_fit

NORMALIZE_OVER = ("prompt", "batch")   # what a group algorithm's `normalize` standardises over
BuildBatch = Callable[..., Tuple[estimators.Batch, Dict[str, jax.Array]]]


def _no_checks(train) -> None:
  del train


@dataclasses.dataclass(frozen=True)
class Algorithm:
  """An RL algorithm: what it needs, and how it builds a step's batch.

  Attributes:
    name: what it is called (its factory's registered name, or any).
    build_batch: (setup, rollouts, key, axis_name) -> (batch, metrics); batch
      {tokens, mask, loss_mask, old_logp, advantages: [B, M, T]} and, with a
      critic, old_values and returns [B, M, T] (and "surprise" [B, M, T, k]
      for a critic that reads it); metrics {name: scalar}.
    check: (train: TrainConfig) -> None, raising ValueError naming a field this
      algorithm cannot use with the run's shared settings (its own
      hyperparameters are checked by its factory).
    critic: a `parts.Critic` trained beside the policy (its loss is added to
      the update's, its optimiser is its own), or None.
    step_boundaries: needs the env's `step_boundaries`.
    extra_responses: responses per prompt it trains on besides the N rollouts
      (M = N + extra_responses; Poly-PPO's vines).
    group_advantage: for a group algorithm, (rewards f32[N], labels i32[N],
      key) -> f32[N], its advantages of one prompt's group (standardised over
      the group where it standardises per prompt); None otherwise.
    standardises_batch: a group algorithm that standardises the step's B * N
      advantages together (normalize_over="batch").
    maximises: (set objective, n) that it maximises, ("mean_reward", 1) for
      standard RL; None where neither (e.g. reward shaping).
  """
  name: str
  build_batch: BuildBatch
  check: Callable[[Any], None] = _no_checks
  critic: Optional[parts.Critic] = None
  step_boundaries: bool = False
  extra_responses: int = 0
  group_advantage: Optional[estimators.GroupAdvantage] = None
  standardises_batch: bool = False
  maximises: Optional[Tuple[str, int]] = None

  def responses_per_group(self, train) -> int:
    """M, the responses per prompt it trains on."""
    return train.samples_per_prompt + self.extra_responses


AlgorithmSpec = Union[Algorithm, Mapping[str, Any], str]   # a value, a config sub-dict, a name


# -- group algorithms: an advantage per response from its prompt's group -----------------

def group(name: str, advantage: Callable[..., jax.Array], *, normalize: bool = True,
          normalize_over: str = "prompt", check: Callable[[Any], None] = _no_checks,
          maximises: Optional[Tuple[str, int]] = None) -> Algorithm:
  """An algorithm whose response advantage comes from its prompt's group alone.

  Args:
    advantage: (rewards f32[N], labels i32[N], key, normalize) -> f32[N]; with
      normalize, standardised over the group, else unnormalised (centred where
      the algorithm centres).
    normalize: standardise the advantages.
    normalize_over: with normalize, "prompt" standardises each prompt's group
      of N; "batch" computes each group's advantages unnormalised and
      standardises all B * N of the step together, so a group whose advantages
      are small (an all-correct group under set RL) keeps them small.
  """
  checks.one_of("normalize_over", normalize_over, NORMALIZE_OVER)
  if normalize_over == "batch" and not normalize:
    raise ValueError("normalize_over='batch' needs normalize=True (it standardises the "
                     "step's advantages together), got normalize=False.")
  per_prompt = normalize and normalize_over == "prompt"
  by_group = lambda rewards, labels, key: advantage(rewards, labels, key, per_prompt)
  standardise_batch = normalize and normalize_over == "batch"
  return Algorithm(name=name, build_batch=_bind(estimators.group_batch, by_group,
                                                standardise_batch),
                   check=check, group_advantage=by_group, standardises_batch=standardise_batch,
                   maximises=maximises)


def grpo(normalize: bool = True, normalize_over: str = "prompt") -> Algorithm:
  """GRPO: rewards centred on the group's mean, divided by its std with `normalize`
  (normalize=False is Dr. GRPO)."""
  def advantage(rewards, labels, key, normalize):
    del labels, key
    return adv_lib.grpo_advantage(rewards, normalize=normalize)
  return group("grpo", advantage, normalize=normalize, normalize_over=normalize_over,
               maximises=("mean_reward", 1))


def reward_shaping(lam: float = 0.0, normalize: bool = True,
                   normalize_over: str = "prompt") -> Algorithm:
  """GRPO on the reward plus `lam` (λ >= 0) times a bonus for a strategy rare in the group."""
  checks.at_least("lam", lam, 0)

  def advantage(rewards, labels, key, normalize):
    del key
    return adv_lib.reward_shaping_advantage(rewards, labels, lam, normalize=normalize)
  return group("reward_shaping", advantage, normalize=normalize, normalize_over=normalize_over)


def set_rl(objective: str = "polychromic", set_size: int = 4, num_subsets: int = 0,
           normalize: bool = True, normalize_over: str = "prompt") -> Algorithm:
  """Set RL: each response's marginal advantage under a set objective over sets of n.

  Args:
    objective: `polyepo.objectives` name ("polychromic" is Poly-EPO).
    set_size: n, 1 <= n < N (the samples per prompt).
    num_subsets: 0 for the exact all-subsets advantage (closed form where one
      exists), else K sampled subsets.
    normalize, normalize_over: as `group`'s.
  """
  check_objective(objective, set_size, num_subsets)

  def advantage(rewards, labels, key, normalize):
    a = adv_lib.set_rl_advantage(objective, rewards, labels, set_size=set_size,
                                 num_subsets=num_subsets or None, key=key)
    return adv_lib.normalize_advantage(a) if normalize else a

  def check(train):
    check_sets_fit(objective, set_size, num_subsets, train.samples_per_prompt,
                   train.samples_per_prompt)
  return group("set_rl", advantage, normalize=normalize, normalize_over=normalize_over,
               check=check, maximises=(objective, set_size))


def windowed(first: AlgorithmSpec = "set_rl", rest: AlgorithmSpec = "grpo") -> Algorithm:
  """`first`'s advantage on each response's first reasoning step (its strategy choice),
  `rest`'s on the tokens after it (`estimators.windowed_advantages`); both group
  algorithms standardised per prompt, if at all. Windowed Poly-EPO is the default."""
  first, rest = resolve(first, "first"), resolve(rest, "rest")
  for part, algorithm in (("first", first), ("rest", rest)):
    if algorithm.group_advantage is None:
      raise ValueError(f"{part} must be a group algorithm (grpo, reward_shaping, set_rl, "
                       f"...), got {algorithm.name!r}.")
    if algorithm.standardises_batch:
      raise ValueError(f"{part}.normalize_over='batch' is not available inside windowed, "
                       f"which standardises each advantage over its prompt's group; use "
                       f"normalize_over='prompt'.")

  def check(train):
    first.check(train)
    rest.check(train)
  return Algorithm(name="set_rl_windowed",
                   build_batch=_bind(estimators.windowed_batch, first.group_advantage,
                                     rest.group_advantage),
                   check=check, step_boundaries=True, maximises=first.maximises)


# -- critic algorithms: a value head and GAE ----------------------------------------------

def ppo(critic: Union[parts.Critic, Mapping[str, Any]] = parts.Critic(),
        gae: Union[parts.GAE, Mapping[str, Any]] = parts.GAE(),
        normalize: bool = True) -> Algorithm:
  """PPO: token advantages by GAE from a critic (`parts.Critic`, `parts.GAE`);
  `normalize` standardises the step's GAE advantages."""
  settings = ppo_batch.Settings(parts.build(parts.Critic, critic, "critic"),
                                parts.build(parts.GAE, gae, "gae"), normalize)
  return Algorithm(name="ppo", build_batch=_bind(ppo_batch.batch, settings),
                   critic=settings.critic, maximises=("mean_reward", 1))


def poly_ppo(objective: str = "polychromic", set_size: int = 4, num_subsets: int = 0,
             vines: Union[parts.Vines, Mapping[str, Any]] = parts.Vines(),
             critic: Union[parts.Critic, Mapping[str, Any]] = parts.Critic(),
             gae: Union[parts.GAE, Mapping[str, Any]] = parts.GAE(),
             normalize: bool = True) -> Algorithm:
  """Poly-PPO (Set RL's §6.1): set advantages of `objective` over sets of n at the
  prompt and at `vines.num_states` rollout states per prompt (from their vines),
  each over `vines.window` reasoning steps; GAE from the critic elsewhere.
  `normalize` standardises each set's and the step's GAE advantages."""
  check_objective(objective, set_size, num_subsets)
  vines = parts.build(parts.Vines, vines, "vines")
  if vines.num_states and vines.samples <= set_size:
    raise ValueError(
        f"vines.samples must be > set_size={set_size} (a rollout state's sets of n are drawn "
        f"from its vines; with vines.samples = n every vine's advantage is 0), got "
        f"vines.samples={vines.samples}.")
  settings = ppo_batch.Settings(parts.build(parts.Critic, critic, "critic"),
                                parts.build(parts.GAE, gae, "gae"), normalize, objective,
                                set_size, num_subsets, vines)

  def check(train):
    check_sets_fit(objective, set_size, num_subsets, train.samples_per_prompt,
                   train.samples_per_prompt)
    if vines.num_states:
      check_sets_fit(objective, set_size, num_subsets, train.samples_per_prompt,
                     vines.samples)
  return Algorithm(name="poly_ppo", build_batch=_bind(ppo_batch.batch, settings), check=check,
                   critic=settings.critic, step_boundaries=True,
                   extra_responses=vines.num_states * vines.samples,
                   maximises=(objective, set_size))


def _bind(build_batch, *settings) -> BuildBatch:
  """`build_batch` with its leading settings bound: (setup, rollouts, key, axis_name) -> ..."""
  return lambda setup, rollouts, key, axis_name: build_batch(*settings, setup, rollouts, key,
                                                             axis_name)


# -- names: the registry, outside factories, config sub-dicts -----------------------------

REGISTRY: Dict[str, Callable[..., Algorithm]] = {
    "grpo": grpo, "reward_shaping": reward_shaping, "set_rl": set_rl,
    "set_rl_windowed": windowed, "ppo": ppo, "poly_ppo": poly_ppo}


def register(name: str, factory: Callable[..., Algorithm]) -> Callable[..., Algorithm]:
  """Adds `factory` under `name` (ValueError if the name is taken) and returns it."""
  if name in REGISTRY:
    raise ValueError(f"an algorithm named {name!r} is already registered.")
  REGISTRY[name] = factory
  return factory


def factory(name: str, path: str = "algorithm") -> Callable[..., Algorithm]:
  """The factory `name`: a registered name, or 'package.module:ATTRIBUTE' naming a
  factory (or an `Algorithm`) that a module outside the package defines.

  Raises:
    ValueError: one line naming `{path}.name`: unknown (with the registered
      names), a module that does not import, or an attribute that is neither.
  """
  if name in REGISTRY or not isinstance(name, str) or ":" not in name:
    if name not in REGISTRY:
      raise ValueError(f"{path}.name must be one of {', '.join(map(repr, REGISTRY))} or "
                       f"'package.module:ATTRIBUTE'; got {name!r}.")
    return REGISTRY[name]
  module_name, attribute = name.split(":", 1)
  try:
    value = getattr(importlib.import_module(module_name), attribute, None)
  except ImportError as err:
    raise ValueError(f"{path}.name={name!r}: cannot import module {module_name!r} ({err}); "
                     f"is its directory on PYTHONPATH?") from err
  if isinstance(value, Algorithm):
    return lambda: value
  if not callable(value):
    raise ValueError(f"{path}.name={name!r}: module {module_name!r} defines no algorithm "
                     f"factory named {attribute!r}.")
  return value


def _keywords(make: Callable[..., Algorithm]) -> Dict[str, inspect.Parameter]:
  return {k: p for k, p in inspect.signature(make).parameters.items()
          if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def resolve(spec: AlgorithmSpec, path: str = "algorithm") -> Algorithm:
  """The algorithm `spec` names: an Algorithm as it is, a name with its defaults, or a
  mapping {name, **keywords} (a ConfigDict too), built by its factory.

  Raises:
    ValueError: one line naming the field under `path`: an unknown name, a
      keyword the factory does not take (with those it does), or a value its
      factory refuses.
  """
  if isinstance(spec, Algorithm):
    return spec
  spec = {"name": spec} if isinstance(spec, str) else _plain(spec)
  if "name" not in spec:
    raise ValueError(f"{path} needs a 'name' (one of {', '.join(map(repr, REGISTRY))} or "
                     f"'package.module:ATTRIBUTE'), got fields {sorted(spec)}.")
  name = spec.pop("name")
  make = factory(name, path)
  known = _keywords(make)
  for key in spec:
    if key not in known:
      raise ValueError(f"{path}: {name} has no field {key!r}; its fields: "
                       f"{', '.join(known) or 'none'}. (A config's algorithm fields are its "
                       f"algorithm's: start from the config file of {name} to train it.)")
  keywords = {k: resolve(v, f"{path}.{k}") if isinstance(v, Mapping) and "name" in v else v
              for k, v in spec.items()}
  try:
    algorithm = make(**keywords)
  except ValueError as err:   # "set_size must ..." -> "algorithm.set_size must ..."
    message = str(err)
    field = re.match(r"[a-z_][\w.]*(?=[ =])", message)
    raise ValueError(f"{path}.{message}" if field else f"{path}: {message}") from err
  if not isinstance(algorithm, Algorithm):
    raise ValueError(f"{path}.name={name!r} made {type(algorithm).__name__}, not an Algorithm.")
  return algorithm


def spec(name: str, **overrides) -> Dict[str, Any]:
  """The config sub-dict of algorithm `name`: {"name": name, **every keyword at its
  default}, a part as a dict of its fields, a nested algorithm as its own sub-dict;
  `overrides` replace defaults (a mapping merges into a part or nested algorithm).

  Raises:
    ValueError: an override the factory does not take.
  """
  out = {"name": name}
  for key, parameter in _keywords(factory(name)).items():
    default = parameter.default
    if default is inspect.Parameter.empty:
      continue
    if dataclasses.is_dataclass(default):
      default = dataclasses.asdict(default)
    elif parameter.annotation is AlgorithmSpec and isinstance(default, str):
      default = spec(default)
    out[key] = default
  for key, value in overrides.items():
    if key not in out:
      raise ValueError(f"algorithm {name!r} has no field {key!r}; its fields: "
                       f"{', '.join(k for k in out if k != 'name')}.")
    if isinstance(value, Mapping) and isinstance(out[key], Mapping):
      nested = _plain(value)
      if "name" in nested and nested["name"] != out[key].get("name"):
        value = spec(nested.pop("name"), **nested)
      else:
        value = dict(out[key], **nested)
    out[key] = value
  return out


def _plain(mapping: Mapping[str, Any]) -> Dict[str, Any]:
  """A dict of `mapping` (a ConfigDict's to_dict()), nested mappings as dicts."""
  mapping = mapping.to_dict() if hasattr(mapping, "to_dict") else mapping
  return {k: _plain(v) if isinstance(v, Mapping) else v for k, v in mapping.items()}
