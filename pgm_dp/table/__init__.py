"""A user's table, end to end: preparation (:mod:`pgm_dp.prepare`) → one validated plan
(options checked once, the budget split into :class:`~pgm_dp.privacy.Budget` values) →
selection (:mod:`pgm_dp.select`) → fit → check (:mod:`pgm_dp.table.check`) → report
(:mod:`pgm_dp.table.report`) → synthetic records (:mod:`pgm_dp.table.synth`). The entry
point is :func:`pgm_dp.table.fit.fit_table`.
"""

from __future__ import annotations

from .fit import TableFit, fit_table
from .synth import iter_table, sample_table, write_table

__all__ = ["TableFit", "fit_table", "sample_table", "iter_table", "write_table"]
