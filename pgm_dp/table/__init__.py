"""A user's table, end to end: preparation (:mod:`pgm_dp.prepare`) → one validated plan
(options checked once, the budget split into :class:`~pgm_dp.privacy.Budget` values) →
selection (:mod:`pgm_dp.select`) → fit → check (:mod:`pgm_dp.table.check`) → report
(:mod:`pgm_dp.table.report`) → synthetic records (:mod:`pgm_dp.table.synth`). The entry
point is :func:`pgm_dp.table.fit.fit_table` (also ``pgm_dp.fit_table``); each name is
imported from its module.
"""
