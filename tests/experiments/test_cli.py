"""One-line errors from the entry points (experiments.cli).

Every bad input below must fail before anything is pretrained, compiled or
written: each command runs as a subprocess with its own empty cache and data
directories, and neither they nor the run directory may exist afterwards.
"""

import json
import os
import subprocess
import sys
import textwrap

from absl import flags
import ml_collections
from ml_collections import config_flags
import pytest

from experiments import cli
import repo

ROOT = repo.ROOT
SMOKE = "--config=configs/poly_epo.py:size=smoke"


def _run(args, tmp_path, timeout=120):
  env = dict(os.environ, POLYEPO_CACHE=str(tmp_path / "cache"),
             POLYEPO_DATA_DIR=str(tmp_path / "data"), JAX_PLATFORMS="cpu")
  return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                        text=True, timeout=timeout)


def _assert_one_line_error(result, message, tmp_path):
  """Exit status 2, `error: ...` naming `message` as the last of at most 2 lines
  on stderr, no traceback, and nothing written under tmp_path."""
  assert result.returncode == cli.EXIT_STATUS, result.stdout[-2000:] + result.stderr[-3000:]
  lines = result.stderr.strip().splitlines()
  assert 1 <= len(lines) <= 2 and lines[-1].startswith("error: "), result.stderr[-3000:]
  assert message in lines[-1], lines[-1]
  assert "Traceback" not in result.stderr
  assert not (tmp_path / "cache").exists() and not (tmp_path / "data").exists()
  assert not (tmp_path / "run").exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize("args,message", [
    ([SMOKE, "--config.train.lerning_rate=1e-4"],
     "unknown config field 'train.lerning_rate'; did you mean 'train.learning_rate'? "
     "Fields of 'train': aggregation, eps_high,"),
    ([SMOKE, "--config.tarin.learning_rate=1e-4"],
     "unknown config field 'tarin.learning_rate'; did you mean 'train'? Fields at the top "
     "level: algorithm, base, domain, env,"),
    ([SMOKE, "--config.algorithm.set_sise=8"],
     "unknown config field 'algorithm.set_sise'; did you mean 'algorithm.set_size'? Fields of "
     "'algorithm': name, normalize, normalize_over, num_subsets, objective, set_size."),
    ([SMOKE, "--config.train.set_size=8"],
     "unknown config field 'train.set_size'. Fields of 'train': aggregation, eps_high,"),
    ([SMOKE, "--config.algorithm.lam=0.3"],
     "unknown config field 'algorithm.lam'. Fields of 'algorithm': name, normalize,"),
    (["--config=configs/poly_ppo.py:size=smoke", "--config.algorithm.critic.modle=trunk"],
     "unknown config field 'algorithm.critic.modle'; did you mean 'algorithm.critic.model'? "
     "Fields of 'algorithm.critic': clip, learning_rate, model."),
    (["--config=notebooks/01_quickstart.ipynb"],
     "--config: 'notebooks/01_quickstart.ipynb' is not a config file"),
    (["--config=configs/gpro.py:size=smoke"],
     "--config: config file 'configs/gpro.py' does not exist; did you mean 'configs/grpo.py'?"),
    (["--config=configs/grpo.py:domain=nope"],
     "--config=configs/grpo.py:domain=nope: domain='nope' is not one of: multiplication, "
     "polynomial_roots"),
    (["--config=configs/grpo.py:size=huge"],
     "--config=configs/grpo.py:size=huge: size='huge' is not one of: smoke, default, paper."),
    ([SMOKE, "--config.algorithm.set_size=99"],
     "set_size must satisfy 1 <= set_size < samples_per_prompt=4, got set_size=99."),
    ([SMOKE, "--config.algorithm.set_size=abc"],
     "--config.algorithm.set_size=abc: invalid literal"),
    ([SMOKE, "--config.algorithm.name=a2c"],
     "algorithm.name must be one of 'grpo', 'reward_shaping', 'set_rl', 'set_rl_windowed', "
     "'ppo', 'poly_ppo' or 'package.module:ATTRIBUTE'; got 'a2c'."),
    ([SMOKE, "--resume", "--overwrite"], "Pass at most one of --resume and --overwrite."),
    ([SMOKE, "--workdri=x"], "Unknown command line flag 'workdri'"),
    ([], "Flag --config must have a value other than None."),
    (["--config=configs/grpo.py:domain=multiplication,size=smoke",
      "--config.domain=polynomial_roots"],
     "--config.domain and the config string both choose domain "
     "(--config=configs/grpo.py:domain=multiplication,size=smoke); choose it once."),
    (["--config=configs/grpo.py:size=smoke", "--config.domain=nope"],
     "--config=configs/grpo.py:size=smoke,domain=nope: domain='nope' is not one of"),
], ids=["misspelled_field", "misspelled_section", "misspelled_algorithm_field",
        "algorithm_field_under_train", "another_algorithm_s_field", "misspelled_part_field",
        "notebook_as_config", "missing_config_file",
        "bad_domain", "bad_size", "invalid_value", "unparsable_value", "unknown_algorithm",
        "resume_and_overwrite",
        "unknown_flag", "no_config", "domain_chosen_twice", "bad_domain_override"])
def test_synthetic_mistakes_are_one_line(args, message, tmp_path):
  result = _run(["-m", "experiments.synthetic", f"--workdir={tmp_path / 'run'}", *args],
                tmp_path)
  _assert_one_line_error(result, message, tmp_path)


def test_an_existing_run_directory_is_one_line_and_left_as_it_was(tmp_path):
  (tmp_path / "run").mkdir()
  (tmp_path / "run" / "notes.txt").write_text("mine")
  result = _run(["-m", "experiments.synthetic", SMOKE, f"--workdir={tmp_path / 'run'}"],
                tmp_path)
  assert result.returncode == cli.EXIT_STATUS
  assert result.stderr.strip().splitlines()[-1] == (
      f"error: Run directory {str(tmp_path / 'run')!r} already exists. Pass --resume to "
      "continue it from its last checkpoint or --overwrite to delete it and start again.")
  assert os.listdir(tmp_path / "run") == ["notes.txt"]
  assert (tmp_path / "run" / "notes.txt").read_text() == "mine"
  assert not (tmp_path / "cache").exists()


@pytest.fixture
def other_model(tmp_path_factory):
  """A base checkpoint whose config.json records a width no config has."""
  directory = tmp_path_factory.mktemp("checkpoint") / "model"
  directory.mkdir()
  (directory / "config.json").write_text(json.dumps({"model": {"width": 999}}))
  return directory


@pytest.mark.parametrize("module,config,flag", [
    ("experiments.synthetic", "configs/grpo.py:size=smoke", "base.checkpoint"),
    ("experiments.pretrain", "configs/pretrain.py:size=smoke", "checkpoint"),
])
def test_a_base_checkpoint_of_another_model_is_one_line(module, config, flag, other_model,
                                                        tmp_path):
  workdir = [f"--workdir={tmp_path / 'run'}"] if module == "experiments.synthetic" else []
  result = _run(["-m", module, f"--config={config}", f"--config.{flag}={other_model}",
                 *workdir], tmp_path)
  _assert_one_line_error(result, f"base checkpoint {other_model} was trained with "
                         "model.width=999, this config has ", tmp_path)
  assert os.listdir(other_model) == ["config.json"]


@pytest.mark.parametrize("args,message", [
    (["--config=configs/pretrain.py:size=smoke", "--config.model.widht=64"],
     "unknown config field 'model.widht'; did you mean 'model.width'? Fields of 'model': "
     "activation, mlp_ratio, num_heads, num_kv_heads, num_layers, width."),
    (["--config=configs/pretrain.py:domain=nope"], "domain='nope' is not one of"),
    (["--config=configs/pretrain.py:size=smoke", "--config.pretrain.num_steps=0"],
     "num_steps must be >= 1, got 0"),
], ids=["misspelled_field", "bad_domain", "invalid_value"])
def test_pretrain_mistakes_are_one_line(args, message, tmp_path):
  _assert_one_line_error(_run(["-m", "experiments.pretrain", *args], tmp_path), message,
                         tmp_path)


@pytest.mark.parametrize("module", ["experiments.report", "experiments.tuning"])
def test_a_missing_sweep_directory_is_one_line(module, tmp_path):
  missing = tmp_path / "no_sweep"
  result = _run(["-m", module, str(missing), f"--out={tmp_path / 'out'}"], tmp_path)
  _assert_one_line_error(result, f"{str(missing)!r} is not a sweep directory", tmp_path)


@pytest.mark.parametrize("args", [
    [SMOKE, "--config.train.lerning_rate=1e-4"],  # fails while the flags are parsed
    [SMOKE, "--config.algorithm.set_size=99"],    # fails in main
], ids=["while_parsing_flags", "in_main"])
def test_verbose_adds_the_traceback(args, tmp_path):
  result = _run(["-m", "experiments.synthetic", f"--workdir={tmp_path / 'run'}", *args,
                 "--verbose"], tmp_path)
  assert result.returncode == cli.EXIT_STATUS
  assert "Traceback (most recent call last)" in result.stderr
  assert result.stderr.strip().splitlines()[-1].startswith("error: ")
  assert not (tmp_path / "run").exists()


RAISE = textwrap.dedent("""
    import sys
    from experiments import cli
    def main(argv):
      raise {}("from main")
    cli.run(main)
""")


def test_a_bug_keeps_its_traceback_and_a_mistake_does_not(tmp_path):
  bug = _run(["-c", RAISE.format("TypeError")], tmp_path)
  assert bug.returncode == 1
  assert "Traceback (most recent call last)" in bug.stderr
  assert bug.stderr.strip().splitlines()[-1] == "TypeError: from main"
  for error in ("ValueError", "FileNotFoundError", "FileExistsError"):
    mistake = _run(["-c", RAISE.format(error)], tmp_path)
    assert (mistake.returncode, mistake.stderr) == (2, "error: from main\n")


def test_an_interrupt_ends_with_one_line_and_status_130(tmp_path):
  # Ctrl-C, or `kill` of a sweep (SIGTERM raises KeyboardInterrupt there): the
  # program has said what it stopped; a traceback would bury it.
  result = _run(["-c", RAISE.format("KeyboardInterrupt")], tmp_path)
  assert (result.returncode, result.stderr) == (130, "interrupted\n")


def _config():
  config = ml_collections.ConfigDict()
  config.train = ml_collections.ConfigDict({"learning_rate": 1e-3, "lam": 0.0})
  config.name = "x"
  return config


@pytest.mark.parametrize("key,message", [
    ("train.lerning_rate", "unknown config field 'train.lerning_rate'; did you mean "
     "'train.learning_rate'? Fields of 'train': lam, learning_rate."),
    ("trian", "unknown config field 'trian'; did you mean 'train'? Fields at the top "
     "level: name, train."),
    ("train.zzz", "unknown config field 'train.zzz'. Fields of 'train': lam, learning_rate."),
    ("name.first", "unknown config field 'name.first': 'name' is 'x', which has no fields."),
])
def test_check_field_names_the_closest_and_the_valid_fields(key, message):
  with pytest.raises(ValueError) as err:
    cli.check_field(_config(), key)
  assert str(err.value) == message


@pytest.mark.parametrize("key", ["train", "train.lam", "name", "train.lam[0]"])
def test_check_field_accepts_the_config_s_fields(key):
  cli.check_field(_config(), key)


def test_load_config_passes_the_config_string_as_ml_collections_does(tmp_path):
  path = tmp_path / "config.py"
  path.write_text("def get_config(arg=None):\n"
                  "  if arg == 'bad':\n    raise ValueError('no bad')\n"
                  "  return {'arg': arg}\n")
  assert cli.load_config(str(path)) == {"arg": None}
  assert cli.load_config(f"{path}:") == {"arg": ""}
  assert cli.load_config(f"{path}:a=1,b=2") == {"arg": "a=1,b=2"}
  with pytest.raises(ValueError, match=f"^--config={path}:bad: no bad$"):
    cli.load_config(f"{path}:bad")
  (tmp_path / "empty.py").write_text("X = 1\n")
  with pytest.raises(ValueError, match="defines no get_config"):
    cli.load_config(str(tmp_path / "empty.py"))
  with pytest.raises(FileNotFoundError, match="did you mean .*config.py'"):
    cli.load_config(str(tmp_path / "confg.py"))


@pytest.mark.parametrize("argv,verbose", [
    (["prog"], False), (["prog", "--verbose"], True), (["prog", "-verbose"], True),
    (["prog", "--verbose=false"], False), (["prog", "--verbose", "--noverbose"], False),
    (["prog", "--noverbose", "--verbose=true"], True), (["prog", "--", "--verbose"], False),
    (["prog", "--verbose_x"], False),
])
def test_verbose_in_reads_the_last_setting(argv, verbose):
  assert cli.verbose_in(argv) is verbose


@pytest.mark.parametrize("argv,expected", [
    (["--config=c.py:size=smoke", "--config.domain=x", "--config.algorithm.lam=1"],
     ["--config=c.py:size=smoke,domain=x", "--config.algorithm.lam=1"]),
    (["--config", "c.py", "--config.domain", "x", "--config.size=smoke"],
     ["--config=c.py:domain=x,size=smoke"]),
    (["--config.size=smoke", "--config=c.py"], ["--config=c.py:size=smoke"]),
    (["--config=c.py", "--config.domainx=1", "--config.train.size=2"],
     ["--config=c.py", "--config.domainx=1", "--config.train.size=2"]),
])
def test_a_config_string_field_given_as_an_override_moves_into_the_string(argv, expected):
  """`--config.domain=X` is the config string's domain=X (get_config builds the
  domain's defaults from it); other overrides stay as they are."""
  flag_values = flags.FlagValues()
  config_flags.DEFINE_config_file("config", None, "a config", flag_values=flag_values)
  assert cli.into_config_string(["prog"] + argv, flag_values) == ["prog"] + expected
