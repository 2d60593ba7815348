"""Tests for polyepo.pretrain: the corpus, the loss going down, the base-model cache,
validation."""

import dataclasses
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from configs import pretrain as pretrain_configs
from experiments import build
from polyepo.evaluation import splits
from polyepo.policy import model as model_lib
from polyepo.pretraining import corpus, pretrain

SMALL = dict(width=32, num_layers=1, num_heads=2)


@pytest.fixture(scope="module")
def env():
  return envs.make("multiplication")


@pytest.mark.slow
def test_corpus_follows_mixture_over_applicable_strategies(env):
  env, params = env
  mixture = (8.0, 0, 0, 0, 0, 0, 1.0, 1.0)  # long_by_b, factor_out, karatsuba
  prompts, responses, mask, strategies = jax.jit(
      lambda k: corpus.corpus_batch(env, params, k, 4096, mixture, 0.0))(jax.random.key(0))
  strategies = np.asarray(strategies)
  assert set(np.unique(strategies)) <= {0, 6, 7}
  problems = splits.sample(env, jax.random.split(jax.random.key(0), 3)[0], params, 4096)
  applicable = np.asarray(env.applicable(problems))
  assert applicable[np.arange(4096), strategies].all()
  # Expected share of factor_out: 1/10 where it applies, 0 elsewhere.
  expected = applicable[:, 6].mean() * 1 / 10
  assert abs((strategies == 6).mean() - expected) < 0.015
  # The mask covers each response up to and including its EOS, and the
  # demonstrations are scored as the strategy that was asked for.
  _, labels = env.score(problems, responses)
  np.testing.assert_array_equal(np.asarray(labels), strategies)
  lengths = np.asarray(mask.sum(1))
  eos_at = np.argmax(np.asarray(responses) == env.eos_id, axis=1)
  np.testing.assert_array_equal(lengths, eos_at + 1)


def test_response_mask_hand_values():
  tokens = jnp.array([[5, 6, 1, 0, 0], [1, 0, 0, 0, 0], [5, 5, 5, 5, 5]])
  np.testing.assert_array_equal(corpus.response_mask(tokens, eos_id=1),
                                [[1, 1, 1, 0, 0], [1, 0, 0, 0, 0], [1, 1, 1, 1, 1]])


@pytest.mark.slow
def test_loss_goes_down(env):
  env, params = env
  config = pretrain.PretrainConfig(mixture=(1.0,) * 8, slip_rate=0.1, batch_size=32,
                                   num_steps=40, steps_per_chunk=20, learning_rate=3e-3,
                                   warmup_steps=5)
  init, run_chunk = pretrain.make_pretrain(config, pretrain.model_config_for(env, **SMALL),
                                           env, params)
  state = init(jax.random.key(0))
  state, first = run_chunk(state)
  state, second = run_chunk(state)
  assert np.all(np.isfinite(second["loss"]))
  assert second["loss"][-5:].mean() < 0.8 * first["loss"][:5].mean()
  assert int(state.step) == 40


def test_make_pretrain_refuses_a_bad_config(env):
  env, params = env
  mc = pretrain.model_config_for(env, **SMALL)
  config = pretrain.PretrainConfig(mixture=(1.0, 2.0), slip_rate=0.1, num_steps=10)
  with pytest.raises(ValueError, match="8 strategies: long_by_b"):
    pretrain.make_pretrain(config, mc, env, params)
  with pytest.raises(ValueError, match="num_steps must be >= 1, got 0"):
    pretrain.make_pretrain(dataclasses.replace(config, mixture=(1.0,) * 8, num_steps=0),
                           mc, env, params)


STRATEGIES = ("a", "b", "c")
GOOD = pretrain.PretrainConfig(mixture=(3.0, 1.0, 0.0), slip_rate=0.0, num_steps=1)


@pytest.mark.parametrize("change,match", [
    (dict(mixture=(1.0, 2.0)), "mixture has 2 weights but the env has 3 strategies: a, b, c"),
    (dict(mixture=(-1.0, 1.0, 1.0)), r"mixture weights must be >= 0 with a positive sum"),
    (dict(mixture=(0.0, 0.0, 0.0)), r"mixture weights must be >= 0 with a positive sum"),
    (dict(slip_rate=1.0), r"slip_rate must be in \[0, 1\), got 1.0"),
    (dict(slip_rate=-0.1), r"slip_rate must be in \[0, 1\), got -0.1"),
    (dict(num_steps=0), "num_steps must be >= 1, got 0"),
    (dict(batch_size=0), "batch_size must be >= 1, got 0"),
    (dict(steps_per_chunk=0), "steps_per_chunk must be >= 1, got 0"),
    (dict(learning_rate=0.0), "learning_rate must be > 0, got 0.0"),
    (dict(learning_rate=-1e-3), "learning_rate must be > 0, got -0.001"),
    (dict(warmup_steps=-1), "warmup_steps must be >= 0, got -1"),
    (dict(weight_decay=-0.01), "weight_decay must be >= 0, got -0.01"),
    (dict(end_lr_ratio=1.5), r"end_lr_ratio must be in \[0, 1\], got 1.5"),
    (dict(grad_clip=0.0), "grad_clip must be > 0, got 0.0"),
    (dict(preference_steps=5, preference_mixture=(1.0,)),
     "preference_mixture has 1 weights but the env has 3 strategies"),
    (dict(preference_steps=5, preference_mixture=(0.0, 0.0, 0.0)),
     "preference_mixture weights must be >= 0 with a positive sum"),
    (dict(preference_steps=-1), "preference_steps must be >= 0, got -1"),
    (dict(preference_learning_rate=0.0), "preference_learning_rate must be > 0, got 0.0"),
    (dict(microbatch_rows=-1), "microbatch_rows must be >= 0, got -1"),
])
def test_validate_names_the_bad_field(change, match):
  with pytest.raises(ValueError, match=match):
    pretrain.validate(dataclasses.replace(GOOD, **change), STRATEGIES)


def test_validate_accepts_edges():
  pretrain.validate(GOOD, STRATEGIES)  # zero weights, no slips, one step
  pretrain.validate(dataclasses.replace(GOOD, slip_rate=0.99, end_lr_ratio=1.0,
                                        warmup_steps=0, weight_decay=0.0), STRATEGIES)


@pytest.mark.slow
def test_base_model_is_cached_and_reused(env, tmp_path):
  env, params = env
  mc = pretrain.model_config_for(env, **SMALL)
  config = pretrain.PretrainConfig(mixture=(1.0,) * 8, slip_rate=0.1, batch_size=8,
                                   num_steps=4, steps_per_chunk=2)
  kwargs = dict(description={"name": "multiplication"}, model_config=mc, config=config,
                seed=0, cache_dir=str(tmp_path), progress=False)
  first, directory, trained = pretrain.base_model(env, params, **kwargs)
  assert trained and str(tmp_path) in directory
  again, directory2, trained2 = pretrain.base_model(env, params, **kwargs)
  assert not trained2 and directory2 == directory
  jax.tree.map(np.testing.assert_array_equal, first, again)
  # Another config (here: seed) is another cache entry.
  _, directory3, trained3 = pretrain.base_model(env, params, **{**kwargs, "seed": 1})
  assert trained3 and directory3 != directory
  # An explicit directory wins over the cache.
  explicit = str(tmp_path / "explicit")
  _, directory4, _ = pretrain.base_model(env, params, **kwargs, checkpoint_dir=explicit)
  assert directory4 == explicit


class Interrupted(Exception):
  pass


@pytest.mark.slow
def test_an_interrupted_pretraining_resumes_to_the_same_params(env, tmp_path):
  """Stopped after its second chunk, with a state saved every chunk, each stage
  resumes there and ends with the params of a pretraining never stopped."""
  env, params = env
  mc = pretrain.model_config_for(env, **SMALL)
  config = pretrain.PretrainConfig(
      mixture=(1.0,) * 8, slip_rate=0.1, batch_size=8, num_steps=6, steps_per_chunk=2,
      warmup_steps=1, preference_mixture=(0.0,) * 7 + (1.0,), preference_steps=4)
  whole = pretrain.pretrain(config, mc, env, params, jax.random.key(0), progress=False)

  def stop_at(stage, step):
    def log(name, at, _):
      if (name, at) == (stage, step):
        raise Interrupted
    return log

  progress_dir = str(tmp_path / "progress")
  seen = []
  with pytest.raises(Interrupted):
    pretrain.pretrain(config, mc, env, params, jax.random.key(0), progress=False,
                      log=stop_at("competence", 4), progress_dir=progress_dir,
                      save_every_chunks=1)
  with pytest.raises(Interrupted):   # resumes competence at step 4, stops in preference
    pretrain.pretrain(config, mc, env, params, jax.random.key(0), progress=False,
                      log=lambda name, at, m: (seen.append((name, at)),
                                               stop_at("preference", 2)(name, at, m)),
                      progress_dir=progress_dir, save_every_chunks=1)
  assert seen == [("competence", 6), ("preference", 2)]
  resumed = pretrain.pretrain(config, mc, env, params, jax.random.key(0), progress=False,
                              log=lambda name, at, _: seen.append((name, at)),
                              progress_dir=progress_dir, save_every_chunks=1)
  assert seen[2:] == [("preference", 4)]
  jax.tree.map(np.testing.assert_array_equal, resumed, whole)
  with pytest.raises(ValueError, match="save_every_chunks must be >= 1"):
    pretrain.pretrain(config, mc, env, params, jax.random.key(0), progress_dir=progress_dir,
                      save_every_chunks=0)


def test_base_model_resumes_its_pretraining_and_keeps_no_progress(env, tmp_path, monkeypatch):
  env, params = env
  mc = pretrain.model_config_for(env, **SMALL)
  config = pretrain.PretrainConfig(mixture=(1.0,) * 8, slip_rate=0.1, batch_size=8,
                                   num_steps=8, steps_per_chunk=2)
  kwargs = dict(description={"name": "multiplication"}, model_config=mc, config=config,
                seed=0, progress=False)
  whole, _, _ = pretrain.base_model(env, params, cache_dir=str(tmp_path / "a"), **kwargs)
  original = pretrain.pretrain

  def interrupted(*args, **kw):   # the first attempt stops after 3 chunks
    def log(name, step, _):
      if step == 6:
        raise Interrupted
    return original(*args, **dict(kw, log=log, save_every_chunks=1))

  monkeypatch.setattr(pretrain, "pretrain", interrupted)
  with pytest.raises(Interrupted):
    pretrain.base_model(env, params, cache_dir=str(tmp_path / "b"), **kwargs)
  monkeypatch.setattr(pretrain, "pretrain", original)
  resumed, directory, trained = pretrain.base_model(env, params, cache_dir=str(tmp_path / "b"),
                                                    **kwargs)
  assert trained and not os.path.exists(os.path.join(directory, pretrain.PROGRESS))
  jax.tree.map(np.testing.assert_array_equal, resumed, whole)


def test_base_model_refuses_a_checkpoint_of_another_model(env, tmp_path):
  """A base-model directory whose config.json (hand-written here) records
  another architecture is refused before anything is restored or trained,
  naming the directory and each differing field with both values; a record
  that differs only in matmul_dtype (compute, not parameters) passes."""
  env, params = env
  mc = pretrain.model_config_for(env, **SMALL)  # width 32, 1 layer, 2 heads
  config = pretrain.PretrainConfig(mixture=(1.0,) * 8, slip_rate=0.1, num_steps=1)
  directory = tmp_path / "model"
  directory.mkdir()
  record = dict(dataclasses.asdict(mc), width=128, num_layers=3, matmul_dtype="bfloat16")
  (directory / "config.json").write_text(json.dumps({"env": {}, "model": record}))
  with pytest.raises(ValueError) as err:
    pretrain.base_model(env, params, description={"name": "multiplication"}, model_config=mc,
                        config=config, seed=0, checkpoint_dir=str(directory), progress=False)
  assert str(err.value) == (
      f"base checkpoint {directory} was trained with model.width=128, this config has 32; "
      "model.num_layers=3, this config has 1 (see its config.json).")
  assert os.listdir(directory) == ["config.json"]  # nothing trained into it
  record.update(width=32, num_layers=1)
  (directory / "config.json").write_text(json.dumps({"model": record}))
  pretrain.check_checkpoint(str(directory), mc)
  pretrain.check_checkpoint(str(tmp_path / "no_config"), mc)


@pytest.mark.slow
def test_problems_without_a_weighted_strategy_add_no_loss(env):
  env, params = env
  mixture = (0.0,) * 6 + (1.0, 0.0)  # factor_out only: applies to about half the problems
  key = jax.random.key(4)
  _, _, mask, _ = corpus.corpus_batch(env, params, key, 512, mixture, 0.0)
  problems = splits.sample(env, jax.random.split(key, 3)[0], params, 512)
  applies = np.asarray(env.applicable(problems))[:, 6]
  assert 0 < applies.mean() < 1
  np.testing.assert_array_equal(np.asarray(mask).any(1), applies)


@pytest.mark.slow
@pytest.mark.parametrize("part", ["opening", "continuation"])
def test_corpus_parts_split_each_response_at_its_opening(env, part):
  """The preference stage trains skewed demonstrations up to the first token
  that tells the strategy apart from every other applicable strategy (computed
  here by brute force over the demonstrations), and balanced ones after it."""
  env, params = env
  key = jax.random.key(5)
  _, responses, mask, strategies = corpus.corpus_batch(
      env, params, key, 64, (1.0,) * 8, 0.0, part=part)
  full = np.asarray(corpus.response_mask(responses, env.eos_id))
  problems = splits.sample(env, jax.random.split(key, 3)[0], params, 64)
  applicable = np.asarray(env.applicable(problems))
  mask, strategies = np.asarray(mask), np.asarray(strategies)
  for b in range(64):
    one = jax.tree.map(lambda x: x[b:b + 1], problems)
    demos = {s: np.asarray(env.demonstrate(key, one, jnp.array([s]))[0][0])
             for s in np.flatnonzero(applicable[b])}
    own = demos[strategies[b]]
    common = [next((t for t in range(len(own)) if own[t] != other[t] or own[t] == env.pad_id),
                   len(own)) for s, other in demos.items() if s != strategies[b]]
    opening = max(common, default=0) + 1
    in_opening = np.arange(len(own)) < opening
    np.testing.assert_array_equal(mask[b], in_opening if part == "opening"
                                  else full[b] & ~in_opening)


@pytest.mark.slow
def test_preference_stage_moves_the_first_token_and_keeps_the_rest(env):
  """After a competence stage, a preference stage that puts all weight on
  karatsuba makes the model start karatsuba, while the other strategies'
  continuations keep being trained; it starts from the competence stage's
  parameters."""
  env, params = env
  mc = pretrain.model_config_for(env, **SMALL)
  config = pretrain.PretrainConfig(
      mixture=(1.0,) * 8, slip_rate=0.0, num_steps=20, batch_size=32, steps_per_chunk=20,
      preference_mixture=(0.0,) * 7 + (1.0,), preference_steps=20,
      preference_learning_rate=3e-3, warmup_steps=2)
  assert list(pretrain.stages(config)) == ["competence", "preference"]
  init, run_chunk = pretrain.make_pretrain(config, mc, env, params)
  state, _ = run_chunk(init(jax.random.key(0)))
  init2, run_chunk2 = pretrain.make_pretrain(config, mc, env, params, "preference")
  start = init2(jax.random.key(1), state.params)
  jax.tree.map(np.testing.assert_array_equal, start.params, state.params)
  assert int(start.step) == 0
  after, metrics = run_chunk2(start)
  # The opening of karatsuba (its first one or two tokens) becomes likely.
  first, last = metrics["token_prob"][0], metrics["token_prob"][-1]
  assert last > 0.3 and last > 3 * first, (first, last)
  assert pretrain.stages(pretrain.without_preference(config)).keys() == {"competence"}
  with pytest.raises(ValueError, match="stage='preference' is not run by this config"):
    pretrain.make_pretrain(dataclasses.replace(config, preference_steps=0), mc, env, params,
                           "preference")


def test_num_microbatches_hand_values():
  """The fewest micro-batches that divide every part and hold <= R rows in all."""
  assert corpus.num_microbatches([256], 32) == 8
  assert corpus.num_microbatches([128, 128], 32) == 8   # 16 + 16 rows each
  assert corpus.num_microbatches([128, 128], 256) == 1
  assert corpus.num_microbatches([6], 4) == 2            # 3 rows
  assert corpus.num_microbatches([5], 2) == 5            # 5 is prime: 1 row
  assert corpus.num_microbatches([7, 14], 5) == 7        # 1 + 2 rows
  assert corpus.num_microbatches([12, 12], 100) == 1


def test_the_default_micro_batch_follows_the_platform(monkeypatch):
  """microbatch_rows=0: 32 rows per micro-batch on a CPU, the whole batch elsewhere."""
  monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
  assert corpus.num_microbatches([128, 128], 0) == 8
  monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
  assert corpus.num_microbatches([128, 128], 0) == 1


def test_cut_lengths_and_trained_ends_hand_values():
  assert corpus.LENGTH_STEP == 8
  assert corpus.cut_lengths(64) == (8, 16, 24, 32, 40, 48, 56, 64)
  assert corpus.cut_lengths(20) == (8, 16, 20)
  assert corpus.cut_lengths(5) == (5,)
  mask = jnp.array([[0, 0, 0, 0], [1, 0, 0, 0], [0, 1, 1, 0], [1, 0, 1, 1]], bool)
  np.testing.assert_array_equal(corpus.trained_ends(mask), [0, 1, 3, 4])


def test_length_order_gives_each_micro_batch_a_block_of_lengths():
  """accumulate's micro-batch c (rows c, c + C, ... of the reordered batch) holds
  the c-th block of rows sorted by trained length."""
  ends = np.array([5, 1, 3, 0, 2, 4])
  mask = np.arange(6)[None, :] < ends[:, None]
  order = np.asarray(corpus.length_order(jnp.asarray(mask), 2))
  assert sorted(order) == list(range(6))
  np.testing.assert_array_equal(ends[order][0::2], [0, 1, 2])
  np.testing.assert_array_equal(ends[order][1::2], [3, 4, 5])
  np.testing.assert_array_equal(corpus.length_order(jnp.asarray(mask), 1),
                                np.argsort(ends))


@pytest.fixture(scope="module")
def addition():
  """tests/helpers/addition_env.py: three strategies of responses of unequal lengths,
  a corpus that compiles in a fraction of multiplication's time."""
  import addition_env  # pylint: disable=g-import-not-at-top
  env = addition_env.Addition()
  return env, env.default_params()


@pytest.mark.parametrize("last_trained", [0, 7, 8, 39, None])
def test_part_value_and_grad_is_the_loss_on_whole_responses(addition, last_trained):
  """Cut after the last trained token (rounded up to LENGTH_STEP), the loss, the
  token probability and the gradient are those computed from the whole
  responses, whatever the cut: at a step boundary (end 8), one past it (end
  9), at the last token (end 40, the addition env's T), or no trained token at
  all (None)."""
  env, params = addition
  assert env.max_response_len == 40
  mc = pretrain.model_config_for(env, **SMALL)
  model_params = model_lib.init_params(jax.random.key(1), mc)
  prompts, responses, real, _ = corpus.corpus_batch(env, params, jax.random.key(2), 6,
                                                    (1.0,) * 3, 0.1)
  t = responses.shape[1]
  # Responses run to the end (no EOS) where a trained token sits past the EOS.
  responses = responses.at[0].set(jnp.full(t, responses[0, 0]))
  if last_trained is None:
    mask = jnp.zeros(responses.shape, bool)
  else:
    mask = real & (jnp.arange(t) <= last_trained)[None]
    mask = mask.at[0, last_trained].set(True)
  count = jnp.maximum(jnp.sum(mask), 1)

  def whole(p):
    logp = model_lib.sequence_logprobs(p, mc, prompts, responses,
                                       corpus.response_mask(responses, env.eos_id))
    logp = jnp.where(mask, logp, 0.0)
    return -jnp.sum(logp) / count, jnp.sum(jnp.where(mask, jnp.exp(logp), 0.0)) / count

  (loss, prob), grads = corpus.part_value_and_grad(model_params, mc, prompts, responses, mask,
                                                   count, env.eos_id)
  (want_loss, want_prob), want_grads = jax.value_and_grad(whole, has_aux=True)(model_params)
  close = lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
  close(loss, want_loss)
  close(prob, want_prob)
  jax.tree.map(close, grads, want_grads)
  if last_trained is not None:
    assert float(loss) > 0.1  # the trained tokens were scored


@pytest.mark.parametrize("stage", ["competence", "preference"])
def test_micro_batches_give_the_batch_step(addition, stage):
  """A step accumulated over micro-batches (each divided by the whole batch's
  token counts) moves the model as the batch at once does: loss, token
  probability and parameters, in both stages (the preference stage's two halves
  are split alike)."""
  env, params = addition
  mc = pretrain.model_config_for(env, **SMALL)
  config = pretrain.PretrainConfig(
      mixture=(1.0,) * 3, slip_rate=0.1, num_steps=2, batch_size=16, steps_per_chunk=2,
      preference_mixture=(4.0, 2.0, 0.5), preference_steps=2,
      learning_rate=1e-3, preference_learning_rate=1e-3)
  results = []
  for rows in (config.batch_size, 4):
    init, run_chunk = pretrain.make_pretrain(
        dataclasses.replace(config, microbatch_rows=rows), mc, env, params, stage)
    results.append(run_chunk(init(jax.random.key(0))))
  (whole, whole_metrics), (micro, micro_metrics) = results
  close = lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
  close(whole_metrics["loss"], micro_metrics["loss"])
  close(whole_metrics["token_prob"], micro_metrics["token_prob"])
  jax.tree.map(close, whole.params, micro.params)
  moved = jax.tree.leaves(jax.tree.map(lambda a, b: np.abs(a - b).max(), whole.params,
                                       init(jax.random.key(0)).params))
  assert max(moved) > 1e-4  # the step did move the model


@pytest.mark.parametrize("domain", ["multiplication", "polynomial_roots"])
def test_the_shipped_base_models_are_what_the_configs_train(domain):
  """results/base/DOMAIN/config.json, saved when the shipped base model was
  trained, is what configs/pretrain.py now identifies (so its cache key, the
  README's copy commands and the sweeps find it), micro-batch size aside."""
  config = pretrain_configs.get_config(f"domain={domain}")
  env, _, model_config, settings = build.pretrain_settings(config)
  fields = pretrain.cache_key_fields({"name": domain, **config.env.to_dict()}, model_config,
                                     settings, config.seed)
  with open(os.path.join("results", "base", domain, "config.json")) as f:
    assert json.loads(json.dumps(fields, default=str)) == json.load(f)
  other = dataclasses.replace(settings, microbatch_rows=settings.microbatch_rows + 1)
  assert pretrain.cache_key_fields({"name": domain}, model_config, other, 0) == \
      pretrain.cache_key_fields({"name": domain}, model_config, settings, 0)
