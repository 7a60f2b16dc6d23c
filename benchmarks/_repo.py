"""Puts the repository root on ``sys.path`` (imported first by the benchmarks that use the
``reproductions`` package, which is not installed with ``pgm_dp``: run them from a clone)."""

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
