r"""One-line errors from the entry points: `cli.run(main)` in place of `absl.app.run(main)`.

A mistake on the command line ends the program with one line on stderr,
`error: <message>`, and exit status 2 (EXIT_STATUS), before any file is written:
a misspelled config field (the closest name and the valid ones are given), a
config file that does not exist or defines no get_config, a bad config string
(`:size=huge`), a value that fails validation, an existing run directory, a
missing path, a base checkpoint of another model. `--verbose` prints the
traceback above that line. Any other exception is a bug and keeps its traceback.
Ctrl-C (or SIGTERM, where the program makes it one) ends it with one line,
`interrupted`, and exit status 130 (INTERRUPTED), as a shell does: what was stopped
and how to go on is the program's to say before that, not a traceback's.

absl parses the flags before `main` runs, and ml_collections' config flags
(`config_flags.DEFINE_config_file`) load the config file and apply the
`--config.a.b=v` overrides while they are parsed, so their mistakes would be
tracebacks from inside absl. `parse_flags` checks them first (`check_config_flags`),
then lets absl parse.
"""

import difflib
import functools
import importlib.util
import os
import re
import sys
import traceback
from typing import Any, Callable, List, Optional, Sequence

from absl import app, flags
from ml_collections.config_flags import config_flags

EXIT_STATUS = 2
INTERRUPTED = 130   # 128 + SIGINT
# What a mistake on the command line raises (the project's own errors, absl's
# flag errors); anything else is a bug.
EXPECTED = (ValueError, FileNotFoundError, FileExistsError, flags.Error, app.UsageError)

VERBOSE = flags.DEFINE_bool("verbose", False,
                            "On a command-line mistake, print the traceback above the "
                            "one-line error.")


def run(main: Callable[[List[str]], Any]) -> None:
  """`absl.app.run(main)`, with one-line errors for EXPECTED exceptions."""
  app.run(functools.partial(_call, main), flags_parser=parse_flags)


def _call(main, argv):
  try:
    return main(argv)
  except EXPECTED as err:
    fail(err, VERBOSE.value)
  except KeyboardInterrupt:
    print("interrupted", file=sys.stderr, flush=True)
    sys.exit(INTERRUPTED)


def parse_flags(argv: List[str]) -> List[str]:
  """absl's flag parsing after `into_config_string` and `check_config_flags`; a
  mistake ends the program (`fail`). Returns the arguments left, as
  `flags.FLAGS(argv)`."""
  try:
    argv = into_config_string(argv)
    check_config_flags(argv)
    return flags.FLAGS(argv)
  except EXPECTED as err:
    fail(err, verbose_in(argv))


def fail(err: BaseException, verbose: bool) -> None:
  """Prints `error: <message>` (under the traceback if verbose) and exits with EXIT_STATUS."""
  if verbose:
    traceback.print_exception(err)
  print(f"error: {str(err) or type(err).__name__}", file=sys.stderr, flush=True)
  sys.exit(EXIT_STATUS)


def verbose_in(argv: Sequence[str]) -> bool:
  """Whether argv sets --verbose (the last of --verbose[=bool] / --noverbose wins);
  read by hand, for mistakes absl's parsing stops at."""
  verbose = False
  for arg in argv[1:]:
    if arg == "--":
      break
    name, eq, value = arg.lstrip("-").partition("=")
    if arg.startswith("-") and name == "noverbose" and not eq:
      verbose = False
    elif arg.startswith("-") and name == "verbose":
      verbose = not eq or value.lower() in ("true", "t", "1")
  return verbose


# Config fields that the config string chooses: get_config builds the rest of
# the config for them (a domain's pretraining defaults, a size's presets), so an
# override of one after the fact would leave the rest built for another.
STRING_FIELDS = ("domain", "size")


def into_config_string(argv: Sequence[str],
                       flag_values: flags.FlagValues = flags.FLAGS) -> List[str]:
  """argv with each `--config.domain=X` (or `--config.domain X`, and `size`)
  moved into that config flag's config string, `--config=path:...,domain=X`, so
  that the whole config is built for X.

  Raises:
    ValueError: a field the config string already sets, or sets twice.
  """
  argv = list(argv)
  for name in list(flag_values):
    if not isinstance(flag_values[name].parser, config_flags.ConfigFileFlagParser):
      continue
    moved, rest, i = [], [], 0
    while i < len(argv):
      match = re.match(rf"^-{{1,2}}{re.escape(name)}\.({'|'.join(STRING_FIELDS)})(=(.*))?$",
                       argv[i])
      if match and match.group(2) is None and i + 1 < len(argv):
        moved.append((match.group(1), argv[i + 1]))
        i += 2
        continue
      if match and match.group(2) is not None:
        moved.append((match.group(1), match.group(3)))
      else:
        rest.append(argv[i])
      i += 1
    spec = _flag_value(rest, name)
    if not moved or spec is None:
      continue
    path, _, arg = spec.partition(":")
    given = [item.partition("=")[0] for item in filter(None, arg.split(","))]
    for field, _ in moved:
      if field in given or [f for f, _ in moved].count(field) > 1:
        raise ValueError(f"--{name}.{field} and the config string both choose {field} "
                         f"(--{name}={spec}); choose it once.")
    spec = f"{path}:" + ",".join(filter(None, [arg] + [f"{f}={v}" for f, v in moved]))
    index = next(i for i, a in enumerate(rest)
                 if re.match(rf"^-{{1,2}}{re.escape(name)}(=|$)", a))
    rest[index:index + (1 if "=" in rest[index] else 2)] = [f"--{name}={spec}"]
    argv = rest
  return argv


def check_config_flags(argv: Sequence[str], flag_values: flags.FlagValues = flags.FLAGS) -> None:
  """Checks each config-file flag given in argv, and its overrides, as
  ml_collections will parse them: `load_config` and `check_field`.

  Raises:
    FileNotFoundError: the config file does not exist.
    ValueError: naming the flag, for a file that is not a config file or a
      config string get_config refuses; naming the field, for an override of a
      field the config does not have.
  """
  argv = flag_values.read_flags_from_files(list(argv), force_gnu=False)
  for name in list(flag_values):
    if not isinstance(flag_values[name].parser, config_flags.ConfigFileFlagParser):
      continue
    spec = _flag_value(argv, name)
    if spec is None:  # not given: absl reports a required flag
      continue
    config = load_config(spec, name)
    for arg in argv:  # overrides, as ml_collections finds them (_GetOverrides)
      if re.match(rf"-{{1,2}}(no)?{re.escape(name)}\.", arg):
        check_field(config, arg.split("=", 1)[0].split(".", 1)[1], name)


def _flag_value(argv: Sequence[str], name: str) -> Optional[str]:
  """The value of --name=VALUE or --name VALUE in argv (the first), or None."""
  for i, arg in enumerate(argv):
    match = re.match(rf"^-{{1,2}}{re.escape(name)}(=|$)", arg)
    if match:
      if match.group(1):
        return arg.split("=", 1)[1]
      return argv[i + 1] if i + 1 < len(argv) else None
  return None


def load_config(spec: str, flag: str = "config"):
  """The ConfigDict of `path[:config string]`, as ml_collections loads it: the
  file's get_config(config string), or get_config() without a colon.

  Raises:
    FileNotFoundError: the file does not exist (the closest file names are given).
    ValueError: the file is not a Python file or defines no get_config, or
      get_config raises ValueError (its message, after the flag and spec).
  """
  path, colon, arg = spec.partition(":")
  if not os.path.isfile(path):
    folder = os.path.dirname(path)
    names = sorted(os.listdir(folder or ".")) if os.path.isdir(folder or ".") else []
    close = difflib.get_close_matches(os.path.basename(path), names, n=1)
    hint = f"; did you mean {os.path.join(folder, close[0])!r}?" if close else "."
    raise FileNotFoundError(f"--{flag}: config file {path!r} does not exist{hint}")
  if not path.endswith(".py"):
    raise ValueError(f"--{flag}: {path!r} is not a config file: a config file is a Python "
                     "file defining get_config(arg), e.g. configs/grpo.py.")
  module_spec = importlib.util.spec_from_file_location(f"{flag}_config_check", path)
  module = importlib.util.module_from_spec(module_spec)
  module_spec.loader.exec_module(module)
  if not callable(getattr(module, "get_config", None)):
    raise ValueError(f"--{flag}: {path!r} defines no get_config(arg), so it is not a "
                     "config file (e.g. configs/grpo.py).")
  try:
    return module.get_config(*([arg] if colon else []))
  except ValueError as err:
    raise ValueError(f"--{flag}={spec}: {err}") from err


def check_field(config, key: str, flag: str = "config") -> None:
  """Raises ValueError unless `key` ("train.learning_rate") names a field of
  `config`; the message gives the closest name and the valid fields at the
  level where `key` leaves the config. An index (`a[0]`) ends the check."""
  parts = key.split(".")
  node = config
  for depth, part in enumerate(parts):
    field = part.split("[", 1)[0]
    here = ".".join(parts[:depth])
    what = "config" if flag == "config" else flag
    if not hasattr(node, "keys"):
      raise ValueError(f"unknown {what} field {key!r}: {here!r} is {node!r}, which has no "
                       "fields.")
    if field not in node:
      valid = sorted(node.keys())
      close = difflib.get_close_matches(field, valid, n=1)
      prefix = f"{here}." if here else ""
      hint = f"; did you mean {prefix + close[0]!r}?" if close else "."
      level = f"of {here!r}" if here else "at the top level"
      raise ValueError(f"unknown {what} field {key!r}{hint} Fields {level}: "
                       f"{', '.join(valid)}.")
    if field != part:
      return
    node = node[field]
