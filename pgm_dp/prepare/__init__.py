"""A user's table → discrete codes: the preparation in :mod:`pgm_dp.prepare.table`
(:func:`prepare_plan`, :class:`Preparation`; its private steps in ``_steps``), the user's
declarations (``_spec``), one column's plan (:mod:`pgm_dp.prepare.columns`), the person column
and the bound on each person's records (:mod:`pgm_dp.prepare.persons`), bins and private
quantiles (:mod:`pgm_dp.prepare.binning`), Dask frames (``_dask``).

``_dask`` sits beside :mod:`pgm_dp.stats`, low in the package's layers, so this package's names
are imported lazily (PEP 562): importing ``pgm_dp.prepare._dask`` loads neither the
preparation nor the privacy layer.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .columns import ColumnPlan
    from .persons import bound_records, with_person
    from .table import NonPrivateWarning, Preparation, check_spec, prepare_plan

__all__ = [
    "prepare_plan",
    "check_spec",
    "Preparation",
    "NonPrivateWarning",
    "ColumnPlan",
    "bound_records",
    "with_person",
]

_HOME = {"ColumnPlan": "columns", "bound_records": "persons", "with_person": "persons"}


def __getattr__(name: str):
    if name in __all__:
        module = importlib.import_module(f".{_HOME.get(name, 'table')}", __name__)
        value = getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
