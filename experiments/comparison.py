r"""The whole comparison in one command that resumes: tuning, then the rows it chose.

  python -m experiments.comparison                          # both domains, side by side
  python -m experiments.comparison --domains=multiplication
  python -m experiments.comparison --domains=polynomial_roots --size=smoke \
      --root=/tmp/comparison --keep=

Each domain D goes through these sweeps (experiments.sweep) in order, each in
ROOT/<name>, each finished run's records kept in KEEP/<name> (`--keep_dir`):

  tuning-D            configs/sweeps/tuning.py: the registered grid, on `validation`
  tuning-D-extendK    tuning.py:extend=: one step beyond each choice at its grid's
                      edge, while there is one (the registered rule), at most
                      --max_extend rounds
  final-D             configs/sweeps/final.py: every choice at the registered size
  shaping_lambda-D    configs/sweeps/shaping_lambda.py: reward shaping's other λs
  recipe-D            configs/sweeps/recipe.py: Poly-EPO with each of the release's settings

After each tuning round, `experiments.tuning` writes the choices to
ROOT/choices-D/round-K/ (tuning.md, chosen.json); the last round's are the ones
the later sweeps train. At --size=smoke, which tries the flow on choices that are
noise, none is extended: the later sweeps train them as they stand, the final
sweep a run per row. A sweep whose runs are all finished, here or in KEEP, is
not started again, so the same command, on this machine or on a fresh one with
the same KEEP (a repository's results/partial), goes on where it stopped. Ctrl-C
or `kill PID` stops the sweeps under way, which log the time their runs had.

Several domains go through their sweeps side by side (on two cores, one core per
domain), each sweep's output in ROOT/<name>.log; one domain's sweeps print to
the terminal. experiments.sweep's --parallel (runs of a sweep at once, default
1), --launcher, --ray_address and --max_retries go to every sweep (docs/ray.md).
When every sweep has finished, it prints the commands that write results/tuning
and results/final from them.
"""

import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import threading
from typing import Callable, List, NamedTuple, Optional, Sequence

from absl import app, flags, logging

from configs import choices
from configs.sweeps import headline
from configs.sweeps import tuning as tuning_sweep
from experiments import cli, ray_sweep, sweep, tuning as tuning_choices

_DOMAINS = flags.DEFINE_string("domains", "all", "all, or one of: "
                               + ", ".join(choices.DOMAINS) + ".")
_ROOT = flags.DEFINE_string("root", os.path.join("runs", "sweeps"),
                            "Where the sweep directories go (ROOT/tuning-D, ...).")
_KEEP = flags.DEFINE_string("keep", os.path.join("results", "partial"),
                            "Where each sweep keeps its finished runs' records (KEEP/tuning-D, "
                            "...); empty: nowhere.")
_SIZE = flags.DEFINE_enum("size", "default", choices.SIZES,
                          "The sweeps' size= (smoke: the whole flow in minutes).")
_MAX_EXTEND = flags.DEFINE_integer("max_extend", 3, "Extension rounds of a domain's tuning "
                                   "before it stops and asks.")

# experiments.sweep's own flags: these go to each sweep; the others name what
# this command decides itself.
PASSED = ("parallel", "launcher", "ray_address", "max_retries")
REFUSED = {"sweep": "it runs every sweep of the comparison",
           "sweep_dir": "use --root (each sweep's directory is ROOT/<its name>)",
           "keep_dir": "use --keep (each sweep keeps its runs in KEEP/<its name>)",
           "only": "every run of each sweep runs",
           "overwrite": "it resumes what it finds; remove a directory to start it afresh"}

LATER = ("final", "shaping_lambda", "recipe")
"""The sweeps that train a domain's choices, in order (configs/sweeps/<name>.py)."""


class Sweep(NamedTuple):
  """One sweep of the comparison: its directory's name and its sweep file with config string."""
  name: str
  spec: str


def spec(sweep_file: str, domain: str, size: str, **args) -> str:
  """configs/sweeps/<sweep_file>.py with its config string (size only when not default)."""
  values = dict(domains=domain, **args, **({} if size == "default" else {"size": size}))
  return f"configs/sweeps/{sweep_file}.py:" + ",".join(f"{k}={v}" for k, v in values.items())


def tuning(domain: str, size: str) -> Sweep:
  return Sweep(f"tuning-{domain}", spec("tuning", domain, size))


def extension(domain: str, size: str, round_: int, chosen: str) -> Sweep:
  """Round `round_` (1, 2, ...) of the tuning's extension, from the choices in `chosen`."""
  return Sweep(f"tuning-{domain}-extend{round_}", spec("tuning", domain, size, extend=chosen))


def later(domain: str, size: str, chosen: str) -> List[Sweep]:
  """The sweeps that train the choices in `chosen`; at size=smoke as they stand
  (provisional=true: a choice at its grid's edge too), the final one a run per row."""
  sweeps = []
  for name in LATER:
    args = {"chosen": chosen}
    if size == "smoke":
      args.update(provisional="true", **({"block": 0} if name == "final" else {}))
    sweeps.append(Sweep(f"{name}-{domain}", spec(name, domain, size, **args)))
  return sweeps


def at_edge(chosen: str, domain: str) -> List[str]:
  """The choices of `domain` in a chosen.json that sit at their grid's edge, as "key (side)"."""
  with open(chosen) as f:
    entries = json.load(f)[domain]
  return sorted(f"{key} ({entry[tuning_sweep.AT_EDGE]})" for key, entry in entries.items()
                if tuning_sweep.AT_EDGE in entry)


def run_domain(domain: str, size: str, run: Callable[[Sweep], None],
               choose: Callable[[Sequence[str], int], str], max_extend: int) -> List[Sweep]:
  """Runs a domain's sweeps in order; returns them.

  Args:
    run: runs one sweep to its end (returns when every run has finished).
    choose: (the names of the tuning sweeps so far, round K) -> the path of the
      chosen.json it wrote from them.
    max_extend: the extension rounds allowed.

  Raises:
    RuntimeError naming the choices still at their grid's edge after `max_extend` rounds.
  """
  done = [tuning(domain, size)]
  run(done[0])
  round_, chosen = 0, choose([done[0].name], 0)
  # A smoke comparison tries the flow; its choices are noise, and none is extended.
  while size != "smoke" and (edges := at_edge(chosen, domain)):
    if round_ == max_extend:
      raise RuntimeError(
          f"{domain}: after {max_extend} extension round(s) the choices of {', '.join(edges)} "
          f"still sit at their grid's edge ({os.path.dirname(chosen)}/tuning.md). The "
          f"registered rule extends until every choice is inside its grid: pass a larger "
          f"--max_extend to go on.")
    round_ += 1
    done.append(extension(domain, size, round_, chosen))
    run(done[-1])
    chosen = choose([s.name for s in done], round_)
  for s in later(domain, size, chosen):
    run(s)
    done.append(s)
  return done


class Runner:
  """Runs sweeps as `python -m experiments.sweep` processes, and stops them on request."""

  def __init__(self, root: str, keep: Optional[str], to_files: bool,
               sweep_flags: Sequence[str] = ("--parallel=1",)):
    self.root, self.keep, self.to_files, self.sweep_flags = root, keep, to_files, sweep_flags
    self.stopping = threading.Event()
    self._lock = threading.Lock()
    self._active = set()

  def finished(self, s: Sweep) -> bool:
    """Whether every run of `s` has finished in ROOT, after restoring those KEEP holds."""
    runs = sweep.load_sweep(s.spec)
    sweep_dir = os.path.join(self.root, s.name)
    if self.keep and os.path.isdir(os.path.join(self.keep, s.name)):
      keep_dir = os.path.join(self.keep, s.name)
      sweep.check_keep_dir(keep_dir, runs)
      sweep.prepare_sweep_dir(sweep_dir, runs, overwrite=False)
      sweep.restore_kept(keep_dir, sweep_dir, runs)
    return all(sweep.is_finished(os.path.join(sweep_dir, "runs", r.name),
                                 sweep.build_config(r).train.num_steps) for r in runs)

  def command(self, s: Sweep) -> List[str]:
    keep = [f"--keep_dir={os.path.join(self.keep, s.name)}"] if self.keep else []
    return [sys.executable, "-m", "experiments.sweep", f"--sweep={s.spec}",
            f"--sweep_dir={os.path.join(self.root, s.name)}", *keep, *self.sweep_flags]

  def __call__(self, s: Sweep) -> None:
    if self.stopping.is_set():
      raise KeyboardInterrupt
    if self.finished(s):
      print(f"{s.name}: finished", flush=True)
      return
    log = None
    if self.to_files:
      log = open(os.path.join(self.root, f"{s.name}.log"), "a")
    command = self.command(s)
    print(f"{s.name}: python {' '.join(command[1:])}"
          + (f" (output: {log.name})" if log else ""), flush=True)
    try:
      # A session of its own: Ctrl-C reaches only this process, which stops each
      # sweep once (`stop`), so that each logs its runs' time.
      process = subprocess.Popen(command, stdout=log,   # ROOT and KEEP as given
                                 stderr=subprocess.STDOUT if log else None,
                                 start_new_session=True)
      with self._lock:
        self._active.add(process)
      returncode = process.wait()
    finally:
      if log:
        log.close()
    with self._lock:
      self._active.discard(process)
    if self.stopping.is_set():
      raise KeyboardInterrupt
    if returncode:
      raise RuntimeError(f"sweep {s.name} failed (exit status {returncode}); its runs' logs "
                         f"are in {os.path.join(self.root, s.name, 'logs')}, and the same "
                         f"command retries it.")

  def stop(self) -> None:
    """Stops every sweep under way (each logs its runs' time) and starts no other."""
    self.stopping.set()
    with self._lock:
      active = list(self._active)
    for process in active:
      ray_sweep.stop(process, timeout=120)


def choose_into(root: str, domain: str) -> Callable[[Sequence[str], int], str]:
  """`run_domain`'s `choose`: experiments.tuning over the named sweeps, into
  ROOT/choices-D/round-K/."""
  def choose(names: Sequence[str], round_: int) -> str:
    out = os.path.join(root, f"choices-{domain}", f"round-{round_}")
    tuning_choices.write_tuning([os.path.join(root, n) for n in names], out)
    return os.path.join(out, "chosen.json")
  return choose


def main(argv):
  logging.set_verbosity(logging.WARNING)
  if len(argv) > 1:
    raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
  for name, instead in REFUSED.items():
    if flags.FLAGS[name].present:
      raise app.UsageError(f"--{name} is experiments.sweep's flag, not this command's: "
                           f"{instead}.")
  if flags.FLAGS.parallel < 1:
    raise app.UsageError(f"--parallel must be >= 1, got {flags.FLAGS.parallel}.")
  if _MAX_EXTEND.value < 0:
    raise app.UsageError(f"--max_extend must be >= 0, got {_MAX_EXTEND.value}.")
  if _DOMAINS.value not in ("all", *choices.DOMAINS):
    raise app.UsageError(f"--domains={_DOMAINS.value!r} is not one of: all, "
                         f"{', '.join(choices.DOMAINS)}.")
  domains = headline.domains(_DOMAINS.value)
  root, keep, size = _ROOT.value, _KEEP.value or None, _SIZE.value
  for domain in domains:  # checked before anything is written
    first = tuning(domain, size)
    if keep:
      sweep.check_keep_dir(os.path.join(keep, first.name), sweep.load_sweep(first.spec))
  os.makedirs(root, exist_ok=True)
  sweep_flags = [f"--parallel={flags.FLAGS.parallel}"] + [
      flags.FLAGS[name].serialize() for name in PASSED[1:] if flags.FLAGS[name].present]
  runner = Runner(root, keep, to_files=len(domains) > 1, sweep_flags=sweep_flags)
  signal.signal(signal.SIGTERM, signal.default_int_handler)
  with concurrent.futures.ThreadPoolExecutor(len(domains)) as pool:
    futures = {pool.submit(run_domain, d, size, runner, choose_into(root, d),
                           _MAX_EXTEND.value): d for d in domains}
    try:
      while not all(f.done() for f in futures):
        concurrent.futures.wait(futures, timeout=1)
    except KeyboardInterrupt:
      print("stopping the sweeps under way; the same command goes on from here", flush=True)
      runner.stop()
      concurrent.futures.wait(futures)
      sys.exit(cli.INTERRUPTED)
  failed = {futures[f]: f.exception() for f in futures if f.exception()}
  for domain, err in failed.items():
    print(f"{domain}: {err}", file=sys.stderr, flush=True)
  sweeps = {futures[f]: f.result() for f in futures if not f.exception()}
  if len(sweeps) == len(domains):
    # The report takes each row from the first directory that has it: the final sweeps first.
    dirs = lambda kinds: " ".join(os.path.join(root, s.name) for kind in kinds for d in domains
                                  for s in sweeps[d] if s.name.split("-")[0] == kind)
    print("every sweep has finished; the tuning and the comparison's report:\n"
          f"  python -m experiments.tuning {dirs(['tuning'])} --out=results/tuning --archive\n"
          f"  python -m experiments.report {dirs(LATER)} --out=results/final --archive",
          flush=True)
  if failed:
    sys.exit(1)


if __name__ == "__main__":
  cli.run(main)
