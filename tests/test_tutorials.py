"""The tutorials run as they are written."""

import runpy
from pathlib import Path

import pytest

TUTORIALS = sorted((Path(__file__).parents[1] / "tutorials").glob("*.py"))


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.name)
def test_tutorial_runs(path):
    runpy.run_path(str(path), run_name="__main__")
