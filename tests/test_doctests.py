"""Every runnable example in the package's docstrings (numpyro style: docs that run)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import pgm_dp

MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(pgm_dp.__path__, prefix="pgm_dp.")
    if not m.name.startswith("pgm_dp.cli")
)


#: Modules whose examples fit a model for seconds of CPU: the second tier (#38).
SLOW = {"pgm_dp.learners.psgd", "pgm_dp.bayes.batch"}


@pytest.mark.parametrize(
    "name", [pytest.param(m, marks=pytest.mark.slow) if m in SLOW else m for m in MODULES]
)
def test_docstring_examples(name):
    mod = importlib.import_module(name)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
