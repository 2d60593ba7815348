"""Every notebook runs top to bottom on tiny settings (injected after its parameters cell)."""

import os

import nbformat
import pytest
from nbclient import NotebookClient
import repo

ROOT = repo.ROOT
NOTEBOOKS = os.path.join(ROOT, "notebooks")

TINY = {
    "01_quickstart.ipynb": 'SIZE = "smoke"\nRL_STEPS = 2\nEVAL_PROBLEMS, EVAL_SAMPLES = 4, 4',
    "02_set_advantage.ipynb": "TABULAR_STEPS = 5\nSEEDS = 1",
    "03_results.ipynb": "RESULTS_DIRS = " + repr([
        os.path.join(ROOT, "results", "final", d)
        for d in ("final-polynomial_roots", "shaping_lambda-polynomial_roots")]),
}


def test_every_notebook_has_tiny_settings():
  assert sorted(f for f in os.listdir(NOTEBOOKS) if f.endswith(".ipynb")) == sorted(TINY)


# The quickstart post-trains twice (about a minute even on tiny settings).
SLOW = {"01_quickstart.ipynb"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n
                                  for n in sorted(TINY)])
def test_notebook_runs(name, tmp_path, monkeypatch):
  monkeypatch.setenv("POLYEPO_CACHE", str(tmp_path / "cache"))
  monkeypatch.setenv("POLYEPO_DATA_DIR", str(tmp_path / "tfds"))
  monkeypatch.setenv("JAX_PLATFORMS", "cpu")
  monkeypatch.setenv("MPLBACKEND", "Agg")
  nb = nbformat.read(os.path.join(NOTEBOOKS, name), as_version=4)
  index = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
  nb.cells.insert(index + 1, nbformat.v4.new_code_cell(TINY[name]))
  NotebookClient(nb, timeout=600, kernel_name="python3",
                 resources={"metadata": {"path": NOTEBOOKS}}).execute()
  errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
            if o.output_type == "error"]
  assert not errors
