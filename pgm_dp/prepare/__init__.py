"""A user's table → discrete codes: the preparation in :mod:`pgm_dp.prepare.table`
(:func:`prepare_table`, :func:`prepare_plan`, :class:`Preparation`; its private steps in
``_steps``), the user's declarations (``_spec``), the kept columns and the one refusal
(``_decisions``), one column's plan (:mod:`pgm_dp.prepare.columns`), the person column and
the bound on each person's records (:mod:`pgm_dp.prepare.persons`), derived columns
(:mod:`pgm_dp.prepare.derived`), bins and private quantiles (:mod:`pgm_dp.prepare.binning`),
the saved plan (:mod:`pgm_dp.prepare.saved`).
"""

from __future__ import annotations

from .columns import ColumnPlan
from .persons import bound_records, with_person
from .table import (
    NonPrivateWarning,
    Preparation,
    PreparedTable,
    check_spec,
    prepare_plan,
    prepare_table,
)

__all__ = [
    "prepare_plan",
    "prepare_table",
    "check_spec",
    "Preparation",
    "PreparedTable",
    "NonPrivateWarning",
    "ColumnPlan",
    "bound_records",
    "with_person",
]
