"""What :func:`pgm_dp.workflow.fit_table` plans for AIM before it runs, from released
quantities and the budget only: its number of rounds (:func:`aim_rounds`) and its default
workload (:func:`default_workload`). The rules are ours (the AIM paper, McKenna et al.
2022, fixes ``T = 16 d`` and leaves the workload to the user), set from the real tables of
``benchmarks/bench_realdata.py``; its README has the measurements."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np

from ..domain import Domain
from ..errors import DomainError
from ..privacy.budget import budget_of, notion_type
from .aim import ROUNDS_PER_VARIABLE
from .schedule import MEASURE_SHARE
from .workload import workload_cliques

__all__ = ["TARGET_TVD", "TRIPLE_CELLS_RATIO", "aim_rounds", "default_workload"]

#: Total-variation error of one measured workload marginal that :func:`aim_rounds` aims at.
TARGET_TVD = 0.05
#: Largest ratio of the median triple's cells to the median pair's at which the pure
#: default workload is every triple (:func:`default_workload`; our choice, below the
#: argument's 9, between the tables of ``benchmarks/bench_realdata.py`` that gain from
#: triples and Adult, which keeps pairs).
TRIPLE_CELLS_RATIO = 7.0


def aim_rounds(
    n_hat: float, cells: list[int], notion: str, amount: float, d: int, sensitivity: float = 1.0
) -> int:
    """AIM's ``T`` (:mod:`pgm_dp.workflow`'s docstring): the largest ``T`` whose first
    rounds measure a marginal of the median size in ``cells`` with expected total-variation
    noise at most :data:`TARGET_TVD` given ``N̂`` records and the rounds' budget ``amount``
    (ε or ρ), clipped to ``[d, ROUNDS_PER_VARIABLE[notion] d]``.

    Args:
        n_hat: the number of records estimated from the noisy one-way tables.
        cells: the cell counts of the workload's marginals.
        notion: ``"pure"`` or ``"zcdp"``, the unit of ``amount``.
        amount: the budget AIM's rounds share.
        d: the number of variables.
        sensitivity: that of one measured table (``K``, the most records of one person):
            the noise is that many times larger at the same cost.

    >>> aim_rounds(48842, [100] * 10, "pure", 2 / 3, 14), aim_rounds(48842, [100], "pure", 0.1, 14)
    (28, 14)
    """
    n = float(np.median(cells)) if cells else 1.0
    allowed = 2 * max(n_hat, 1.0) * TARGET_TVD / (n * sensitivity)  # E|noise| per unit
    # b = T / (0.9 ε) (pure) or sqrt(2/pi) sigma, sigma = sqrt(T / (2 * 0.9 rho)) (zCDP)
    t = budget_of(notion, amount).split(MEASURE_SHARE).measurements_within(allowed)
    top = ROUNDS_PER_VARIABLE[notion] * d
    return int(min(max(math.floor(t), d), top))


def default_workload(domain: Domain, notion: str) -> str | None:
    """AIM's workload when none is given: ``None`` (every pair) under zCDP; under pure ε
    ``"3way"`` (every triple of at most ``WORKLOAD_MAX_CELLS`` cells) when triples are
    cheap, the median such triple at most :data:`TRIPLE_CELLS_RATIO` times the cells of the
    median pair, else ``None``. Pure costs add up, so every table's noise scale grows with
    the number of tables measured, and a triple answers its three pairs for one table's
    price (a third of the noise); a pair read off it sums ``n3 / n2`` noisy cells per cell
    (``sqrt(n3 / n2)`` times the noise). The triple wins while ``n3 / n2 < 9`` when all
    three pairs are new, less when they overlap. Under zCDP, where the noise grows as the
    square root of the number of tables, triples did not help. The domain is the prepared
    one (public, or post-processing of the released one-way tables).

    Args:
        domain: the prepared domain AIM runs on.
        notion: ``"pure"`` or ``"zcdp"``.

    >>> from pgm_dp import Domain
    >>> small, large = Domain(list("abcd"), [2, 3, 4, 2]), Domain(list("abcd"), [30, 20, 40, 25])
    >>> default_workload(small, "pure"), default_workload(small, "zcdp")
    ('3way', None)
    >>> default_workload(large, "pure") is None  # triples 20-30 times the pairs' cells
    True
    """
    if not notion_type(notion).is_pure or len(domain) < 3:
        return None
    try:
        triples = [domain.size(c) for c, _ in workload_cliques(domain, "3way")]
    except DomainError:  # every triple above WORKLOAD_MAX_CELLS
        return None
    pairs = [domain.size(c) for c in combinations(domain.attributes, 2)]
    return "3way" if np.median(triples) <= TRIPLE_CELLS_RATIO * np.median(pairs) else None
