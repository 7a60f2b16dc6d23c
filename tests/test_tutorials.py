"""The tutorials run as they are written: plain scripts with ``runpy``; jupytext-paired
notebooks (``.py`` + ``.ipynb``) are checked in sync and executed cell by cell in a kernel
(small settings; ``PGM_DP_TUTORIAL_FULL=1`` runs the full sizes)."""

import runpy
from pathlib import Path

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.slow  # end-to-end runs: the second tier (pytest -m slow)

HERE = Path(__file__).parents[1] / "tutorials"
NOTEBOOKS = sorted(p for p in HERE.glob("*.py") if p.with_suffix(".ipynb").exists())
SCRIPTS = sorted(set(HERE.glob("*.py")) - set(NOTEBOOKS))


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_tutorial_runs(path):
    runpy.run_path(str(path), run_name="__main__")


def _code(nb) -> list[str]:
    return [c.source.strip() for c in nb.cells if c.cell_type == "code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_paired_and_runs(path, tmp_path):
    nb = jupytext.read(path)
    stored = nbformat.read(path.with_suffix(".ipynb"), as_version=4)
    assert _code(nb) == _code(stored), f"{path.name}: run `jupytext --sync` on it"
    NotebookClient(nb, timeout=300, resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
