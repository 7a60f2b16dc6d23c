"""The code is ``ruff`` clean: lint rules and formatting as configured in ``pyproject.toml``
(ruff comes with the ``test`` extra)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PATHS = ["pgm_dp", "reproductions", "tests", "benchmarks", "tutorials"]


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["lint", "format"])
def test_ruff_clean(command):
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *command, *PATHS],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
