"""The constants and formulas of each notion a mechanism spends, inherited by its budget type.

:class:`~pgm_dp.privacy.budget.PureDP` (``ε``) and :class:`~pgm_dp.privacy.budget.ZCDP`
(``ρ``) take theirs from :class:`PureAlgebra` and :class:`ZCDPAlgebra`: which mechanisms
measure under the notion, the noise scale a cost buys for a sensitivity-1 query, the scale of
a noise variance, a cell's expected absolute noise, the cost of halving the noise, the
exponential mechanism's ``ε`` and charge, and how many measurements of a given noise a budget
holds. Call sites ask a budget, or :func:`~pgm_dp.privacy.budget.notion_type` for a notion
named by a string, instead of comparing notion strings (issue #38). The static methods take
the amount (a cost) as an argument: the formulas hold for any cost, budget or not.

>>> from pgm_dp.privacy import PureDP, ZCDP
>>> PureDP.noise_scale(0.5), ZCDP.noise_scale(0.5)
(2.0, 1.0)
>>> ZCDP.selection_cost(2.0)
ZCDP(rho=0.5)
"""

from __future__ import annotations

import math
from typing import Self

__all__ = ["PureAlgebra", "ZCDPAlgebra"]


class PureAlgebra:
    """``ε`` (pure DP): Laplace noise, exponential mechanisms charged ``ε``."""

    #: The mechanisms that spend ``ε`` (the first is the default).
    mechanisms = ("discrete_laplace", "laplace")
    #: The mechanisms spend ``ε`` (pure DP).
    is_pure = True
    #: Factor of a cost that halves the noise scale: ``ε = Δ₁/b`` (Laplace) doubles.
    halving_cost = 2.0

    @property
    def default_mechanism(self) -> str:
        """The mechanism a release takes when none is named: ``"discrete_laplace"``."""
        return self.mechanisms[0]

    @staticmethod
    def noise_scale(cost: float) -> float:
        """Laplace's ``b = 1/ε`` of a sensitivity-1 query bought by ``cost``.

        Args:
            cost: ``ε > 0`` spent on the query (Dwork et al. 2006, the Laplace mechanism).
        """
        return 1 / cost

    @staticmethod
    def scale_of_variance(variance: float) -> float:
        """Laplace's ``b = sqrt(var/2)`` (the Laplace(b) variance is ``2b²``).

        Args:
            variance: the noise variance of a measured cell.
        """
        return math.sqrt(variance / 2)

    @staticmethod
    def expected_abs_noise(scale: float) -> float:
        """``E|noise| = b`` of a Laplace(``b``) cell.

        Args:
            scale: Laplace's ``b``.
        """
        return scale

    @staticmethod
    def selection_epsilon(cost: float) -> float:
        """``ε`` of an exponential mechanism charged ``cost``: the cost itself (McSherry &
        Talwar 2007; AIM's pure variant, :mod:`pgm_dp.select.schedule`).

        Args:
            cost: ``ε`` budgeted for the selection.
        """
        return cost

    @classmethod
    def selection_cost(cls, epsilon: float) -> Self:
        """The charge of an ``ε`` exponential mechanism: ``PureDP(ε)`` (McSherry & Talwar
        2007), the charge the mechanism records itself.

        Args:
            epsilon: the exponential mechanism's ``ε``.
        """
        return cls(epsilon)

    def measurements_within(self, abs_noise: float) -> float:
        """How many sensitivity-1 Laplace measurements with ``E|noise| = abs_noise`` per cell
        compose (basic) to this budget: ``ε · abs_noise`` (each costs ``1/b``, ``b =
        abs_noise``; the inverse of :meth:`noise_scale` and :meth:`expected_abs_noise`).

        Args:
            abs_noise: the expected absolute noise allowed per cell (counts).
        """
        return self.epsilon * abs_noise


class ZCDPAlgebra:
    """``ρ`` (zCDP): Gaussian noise, exponential mechanisms charged ``ε²/8``."""

    #: The mechanisms that spend ``ρ`` (the first is the default).
    mechanisms = ("discrete_gaussian", "gaussian")
    #: The mechanisms spend ``ρ``, not ``ε``.
    is_pure = False
    #: Factor of a cost that halves the noise scale: ``ρ = Δ₂²/(2σ²)`` (Bun & Steinke 2016,
    #: Prop. 1.6) quadruples.
    halving_cost = 4.0

    @property
    def default_mechanism(self) -> str:
        """The mechanism a release takes when none is named: ``"discrete_gaussian"``."""
        return self.mechanisms[0]

    @staticmethod
    def noise_scale(cost: float) -> float:
        """The Gaussian's ``σ = sqrt(1/(2ρ))`` of a sensitivity-1 query bought by ``cost``
        (Bun & Steinke 2016, Prop. 1.6).

        Args:
            cost: ``ρ > 0`` spent on the query.
        """
        return math.sqrt(1 / (2 * cost))

    @staticmethod
    def scale_of_variance(variance: float) -> float:
        """The Gaussian's ``σ = sqrt(var)``.

        Args:
            variance: the noise variance of a measured cell.
        """
        return math.sqrt(variance)

    @staticmethod
    def expected_abs_noise(scale: float) -> float:
        """``E|noise| = sqrt(2/π) σ`` of a Gaussian(``σ``) cell (half-normal mean).

        Args:
            scale: the Gaussian's ``σ``.
        """
        return math.sqrt(2 / math.pi) * scale

    @staticmethod
    def selection_epsilon(cost: float) -> float:
        """``ε`` of an exponential mechanism charged ``cost``: ``sqrt(8ρ)``, rounded down so
        that the charge ``ε²/8`` (:meth:`selection_cost`) is at most ``cost`` (McKenna et al.
        2022, AIM Alg. 1).

        Args:
            cost: ``ρ`` budgeted for the selection.
        """
        eps = math.sqrt(8 * cost)
        while eps > 0 and eps**2 / 8 > cost:
            eps = math.nextafter(eps, 0.0)
        return eps

    @classmethod
    def selection_cost(cls, epsilon: float) -> Self:
        """The charge of an ``ε`` exponential mechanism: ``ZCDP(ε²/8)`` (it is
        ``ε``-bounded-range, Cesar & Rogers 2021, Lemma 3.2; McKenna et al. 2022, AIM).

        Args:
            epsilon: the exponential mechanism's ``ε``.
        """
        return cls(epsilon**2 / 8)

    def measurements_within(self, abs_noise: float) -> float:
        """How many sensitivity-1 Gaussian measurements with ``E|noise| = abs_noise`` per
        cell compose (Zhang et al. Lemma 2.15) to this ``ρ``: ``2ρ (abs_noise /
        sqrt(2/π))²`` (each costs ``1/(2σ²)``, ``σ = abs_noise / sqrt(2/π)``; the inverse of
        :meth:`noise_scale` and :meth:`expected_abs_noise`).

        Args:
            abs_noise: the expected absolute noise allowed per cell (counts).
        """
        return 2 * self.rho * (abs_noise / math.sqrt(2 / math.pi)) ** 2
