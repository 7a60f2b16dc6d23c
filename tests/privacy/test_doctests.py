"""The runnable examples in the privacy docstrings."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "accountant",
    "audit",
    "budget",
    "dpsgd",
    "mechanisms",
    "noise",
    "release",
    "samplers",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    mod = importlib.import_module(f"pgm_dp.privacy.{name}")
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
