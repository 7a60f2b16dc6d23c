"""AIM's budget annealing (McKenna et al. 2022, Sec. 4), in zCDP and in a pure-DP variant.

A round measures one marginal (L2 / L1 sensitivity 1, or ``K`` when one person owns up to
``K`` records: the schedule's ``sensitivity``, which multiplies every noise scale) and selects
it with the exponential mechanism. The schedule keeps the two costs of the next round,
``(measure, select)``:

zCDP (the paper's mechanism; reference implementation ``AIM.run``)
    ``T`` rounds planned (``16 d`` by default); the initial costs are ``0.9 ρ / T`` and
    ``0.1 ρ / T``, i.e. Gaussian noise ``σ = sqrt(T / (2 · 0.9 ρ))`` (cost ``1 / (2σ²)``)
    and an exponential mechanism with ``ε = sqrt(8 · 0.1 ρ / T)`` (cost ``ε² / 8``: it is
    ``ε``-bounded-range, Cesar & Rogers 2021). The one-way marginals are measured first at
    the same ``σ``. Before each round, if less than twice the round's cost is left, the
    round is the last and takes all that is left: ``σ = sqrt(1 / (2 · 0.9 r))``,
    ``ε = sqrt(8 · 0.1 r)``. Annealing (when the estimate barely moved) halves ``σ`` and
    doubles ``ε``: both costs times 4.
pure DP (our variant: zCDP does not imply pure DP)
    The same rules with the pure costs: Laplace noise ``b = T / (0.9 ε)`` (cost ``1 / b``),
    an exponential mechanism with ``ε_sel = 0.1 ε / T`` (cost ``ε_sel``); the last round
    takes ``b = 1 / (0.9 r)``, ``ε_sel = 0.1 r``; annealing halves ``b`` and doubles
    ``ε_sel`` (both costs times 2). The expected absolute noise of a cell is ``b`` where
    the Gaussian's is ``sqrt(2/π) σ``. Pure costs compose linearly, so the noise of a
    round grows as ``T`` (zCDP: ``sqrt(T)``); :func:`~.aim.aim` plans ``T = 2 d`` rounds
    by default here (our choice: fewer, less noisy rounds suit linear composition, more so
    with the pure default workload of triples, whose tables each answer three pairs).

>>> s = Schedule("zcdp", 1.0, rounds=10)
>>> [round(x, 6) for x in s.initial()]
[0.09, 0.01]
>>> round(s.scale(0.09), 6), round(s.selection_epsilon(0.01), 6)  # sigma, epsilon
(2.357023, 0.282843)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from ..errors import PrivacyParameterError
from ..privacy.budget import ZCDP, PureDP, notion_type

__all__ = ["Schedule", "MEASURE_SHARE", "float_below"]

#: Share of each round's budget spent on the measurement (the rest selects).
MEASURE_SHARE = 0.9


def float_below(x: Fraction | float) -> float:
    """The largest float ``<= x`` (exactly), at least 0: a remainder that, added to the costs
    already charged, never composes to more than the budget (not even by a rounding).

    >>> float_below(Fraction(1, 10)) < 0.1  # the float 0.1 is above 1/10
    True
    """
    x = Fraction(x)
    f = float(x)
    if Fraction(f) > x:
        f = math.nextafter(f, -math.inf)
    return max(f, 0.0)


@dataclass(frozen=True)
class Schedule:
    """AIM's annealing plan for a total ``budget`` (``ρ`` for ``"zcdp"``, ``ε`` for
    ``"pure"``) and ``rounds`` ``T`` (module docstring); ``sensitivity``: that of one
    measured table (``K``, the most records of one person; 1 by default). The notion's
    formulas are those of its budget type, ``unit``
    (:func:`~pgm_dp.privacy.budget.notion_type`)."""

    notion: str
    budget: float
    rounds: int
    sensitivity: float = 1.0
    unit: type[PureDP] | type[ZCDP] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "unit", notion_type(self.notion))
        if not (math.isfinite(self.budget) and self.budget > 0):
            raise PrivacyParameterError(f"budget must be finite and > 0, got {self.budget!r}")

    @property
    def growth(self) -> float:
        """Factor of both costs when annealing: 4 (zCDP), 2 (pure DP); ``halving_cost``."""
        return self.unit.halving_cost

    def initial(self) -> tuple[float, float]:
        """Costs ``(measure, select)`` of a first round: ``0.9 B / T``, ``0.1 B / T``."""
        return MEASURE_SHARE * self.budget / self.rounds, (1 - MEASURE_SHARE) * self.budget / (
            self.rounds
        )

    def last(self, remaining: Fraction | float) -> tuple[float, float]:
        """Costs of a last round taking all of ``remaining``: ``0.9 r``, ``0.1 r``, adding
        up to exactly ``r``, the largest float ``<= remaining`` (:func:`float_below`; ``r -
        0.9 r`` is exact, Sterbenz's lemma)."""
        r = float_below(remaining)
        measure = MEASURE_SHARE * r
        return measure, r - measure

    def next(self, used: Fraction | float, costs: tuple[float, float]) -> tuple[float, float, bool]:
        """``(measure, select, last)`` of the next round from the current costs: the last
        round when less than twice ``sum(costs)`` is left. ``used`` (best the exact sum of
        the costs charged, a ``Fraction``) and the remainder are computed exactly."""
        remaining = Fraction(self.budget) - Fraction(used)
        if remaining < 2 * (Fraction(costs[0]) + Fraction(costs[1])):
            return (*self.last(remaining), True)
        return (*costs, False)

    def anneal(self, costs: tuple[float, float]) -> tuple[float, float]:
        """Costs after annealing: noise scale halved, selection ``ε`` doubled."""
        return costs[0] * self.growth, costs[1] * self.growth

    def scale(self, measure: float) -> float:
        """Noise scale bought by a measurement cost: ``σ = Δ sqrt(1/(2ρ))`` or ``b = Δ/ε``
        (``Δ`` the ``sensitivity``)."""
        return self.sensitivity * self.unit.noise_scale(measure)

    def selection_epsilon(self, select: float) -> float:
        """``ε`` of the exponential mechanism: ``sqrt(8 ρ)`` (zCDP; rounded down so that the
        charge ``ε² / 8`` is at most ``select``) or the cost itself (``selection_epsilon``)."""
        return self.unit.selection_epsilon(select)

    def expected_abs_noise(self, measure: float) -> float:
        """``E|noise|`` of one cell: ``sqrt(2/π) σ`` (Gaussian) or ``b`` (Laplace)."""
        return self.unit.expected_abs_noise(self.scale(measure))
