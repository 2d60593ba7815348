"""The tiny RL setting the train-step and loop tests share: a one-layer policy on
`toy_env.ChoiceEnv` and a four-step set-RL config (one compiled program for both):
TINY the shared settings, SET_RL its algorithm (`algorithms.resolve(SET_RL_SPEC)`)."""

import jax

import toy_env
from polyepo.policy import model
from polyepo.pretraining import pretrain
from polyepo.rl import algorithms, train

SMALL = dict(width=32, num_layers=1, num_heads=2)
TINY = train.TrainConfig(prompts_per_step=2, samples_per_prompt=4, num_minibatches=1,
                         num_steps=4, steps_per_chunk=2, learning_rate=1e-2, warmup_steps=1)
SET_RL_SPEC = dict(name="set_rl", set_size=2)
SET_RL = algorithms.resolve(SET_RL_SPEC)


def setup():
  """(env, env_params, model_config, base_params) of the tiny setting."""
  env = toy_env.ChoiceEnv()
  mc = pretrain.model_config_for(env, **SMALL)
  return env, env.default_params(), mc, model.init_params(jax.random.key(0), mc)
