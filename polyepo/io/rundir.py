"""What the project writes into a directory, and removing only that.

`--overwrite` must never delete a file the project did not write: `clear`
removes a run (or sweep) directory's own entries, described by a layout, after
checking that everything in the directory is one of them: the entries are the
markers that make it the project's. A directory holding anything else (a
user's notes, a checkout) or a symbolic link anywhere the layout names a file
or folder is refused, naming what was found; nothing is removed then.

A layout maps an entry name (a shell pattern) to OWNED (the entry is the
project's, whatever it holds: a file, or a folder written by orbax or
tensorboardX) or to a nested layout (a folder whose entries must match it).
"""

import fnmatch
import os
import shutil
from typing import Dict, List, Union

OWNED = "owned"
Layout = Dict[str, Union[str, "Layout"]]

# A run directory (polyepo.loop.train_and_evaluate), or a copy of one archived
# under results/, whose records are gzipped (`writers.jsonl_path`).
RUN_LAYOUT: Layout = {"config.json": OWNED, "config.json.tmp": OWNED, "train.jsonl": OWNED,
                      "eval.jsonl": OWNED, "train.jsonl.gz": OWNED, "eval.jsonl.gz": OWNED,
                      "tb": OWNED, "checkpoints": OWNED}
# A sweep directory (experiments.sweep).
SWEEP_LAYOUT: Layout = {"sweep.json": OWNED, "sweep.json.tmp": OWNED, "sweep.jsonl": OWNED,
                        "logs": {"*.log": OWNED}, "runs": {"*": RUN_LAYOUT}}


def is_of(directory: str, layout: Layout) -> bool:
  """Whether `directory` holds at least one entry that `layout` names (a run
  directory to resume holds its config, records or checkpoints)."""
  return os.path.isdir(directory) and any(
      fnmatch.fnmatchcase(name, k) for name in os.listdir(directory) for k in layout)


def foreign_entries(directory: str, layout: Layout) -> List[str]:
  """The paths under `directory` that `layout` does not describe (sorted).

  A symbolic link is never the project's: it is foreign wherever it is, so that
  clearing a directory never reaches a path outside it.
  """
  found = []
  for name in sorted(os.listdir(directory)):
    path = os.path.join(directory, name)
    kind = next((v for k, v in layout.items() if fnmatch.fnmatchcase(name, k)), None)
    if kind is None or os.path.islink(path):
      found.append(path)
    elif kind is not OWNED:
      if os.path.isdir(path):
        found += foreign_entries(path, kind)
      else:
        found.append(path)
  return found


def check(directory: str, layout: Layout, what: str = "run directory") -> None:
  """Raises unless `clear` may empty `directory`; touches nothing.

  Args:
    directory: a path (a missing or empty directory passes).
    layout: what the project writes there (RUN_LAYOUT, SWEEP_LAYOUT).
    what: the directory's kind, for messages.

  Raises:
    FileExistsError naming the directory and what was found when it is a
    symbolic link or not a folder, or holds an entry the layout does not
    describe.
  """
  if not os.path.lexists(directory):
    return
  if os.path.islink(directory) or not os.path.isdir(directory):
    raise FileExistsError(
        f"{directory!r} is {'a symbolic link' if os.path.islink(directory) else 'not a folder'}; "
        f"--overwrite only clears a {what} itself. Pass the real path, or choose another.")
  entries = os.listdir(directory)
  if not entries:
    return
  foreign = foreign_entries(directory, layout)
  if foreign:
    shown = ", ".join(os.path.relpath(p, directory) for p in foreign[:5])
    more = f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
    raise FileExistsError(
        f"{directory!r} is not a {what}: it holds files this project did not write "
        f"({shown}{more}). --overwrite removes only what this project wrote; choose "
        f"another directory.")


def clear(directory: str, layout: Layout, what: str = "run directory") -> None:
  """Empties `directory` of the entries of `layout`, after `check` (which
  raises, removing nothing, if anything else is there). The directory itself
  stays."""
  check(directory, layout, what)
  if not os.path.isdir(directory):
    return
  for name in os.listdir(directory):
    path = os.path.join(directory, name)
    if os.path.isdir(path):
      shutil.rmtree(path)
    else:
      os.unlink(path)
