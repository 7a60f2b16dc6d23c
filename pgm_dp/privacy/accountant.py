"""A privacy odometer with a hard limit: :class:`Accountant` and its :class:`Charge` records.

Every mechanism in :mod:`pgm_dp.privacy` calls :meth:`Accountant.charge` *before* drawing any
noise; a charge that does not fit raises :class:`~pgm_dp.errors.BudgetExceededError` and records
nothing, so nothing is released.

Which costs each notion of total budget accepts, and how they are added up:

* ``PureDP`` total: ``PureDP`` charges (and ``ApproxDP`` with ``δ = 0``); ``ε`` add (basic
  composition). The check is a pure-DP privacy filter, valid even when later costs are chosen
  adaptively (Rogers, Roth, Ullman & Vadhan 2016).
* ``ZCDP`` total: ``ZCDP`` charges, and pure charges converted by ``ε ↦ ε²/2`` (Zhang et al.
  Lemma 2.14); ``ρ`` add (Lemma 2.15). Valid with adaptively chosen costs (zCDP/Rényi filter,
  Feldman & Zrnic 2021).
* ``ApproxDP(ε_T, δ_T)`` total: every notion. Pure charges add to ``ε_pure``; approximate
  charges add to ``(ε_apx, δ_apx)``; zCDP charges add to ``ρ`` (pure charges are **not** folded
  into ``ρ``). The spent budget is, by basic composition of the three groups,

  ``ε = ε_pure + ε_apx + ε_ρ``, ``δ = δ_apx + δ_ρ``,  with ``δ_ρ = δ_T - δ_apx`` and
  ``ε_ρ`` = the ``ρ → (ε, δ_ρ)`` conversion (``conversion=`` ``"cks"`` by default,
  see :func:`~pgm_dp.privacy.budget.zcdp_to_approx_dp`); ``ε_ρ = δ_ρ = 0`` when ``ρ = 0``.

  So once a zCDP cost is charged, all unused ``δ`` is given to its conversion. This is the
  standard composition theorem for a sequence of mechanisms whose privacy parameters are fixed
  in advance (the mechanisms themselves may be chosen adaptively); a fully-adaptive filter
  guarantee for this mixed rule is not claimed.

Charging is atomic: the check and the append run under one lock (as do all reads of the
ledger), so concurrent threads sharing an accountant can never spend more than the total.

Sums use ``math.fsum`` (:attr:`Accountant.spent` rounds the exact sum up, never down) and a
charge fits when the new total is at most the budget times
``1 + 1e-12`` (so that, e.g., ten charges of ``ε = 0.1`` fit a budget of ``ε = 1``).

Example
-------
>>> from pgm_dp.privacy import Accountant, PureDP, ZCDP
>>> acc = Accountant(ZCDP(1.0))
>>> _ = acc.charge(PureDP(1.0), what="counts", mechanism="laplace", scale=1.0)
>>> acc.spent, acc.remaining
(ZCDP(rho=0.5), ZCDP(rho=0.5))
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from fractions import Fraction

from ..errors import BudgetExceededError, PrivacyParameterError
from .budget import ZCDP, ApproxDP, Budget, ConversionMethod, PureDP, _unchecked, zcdp_to_approx_dp

__all__ = ["Accountant", "Charge", "check_accountant"]

_TOL = 1e-12


def _sum_up(values: list[float]) -> float:
    """The smallest float at or above the exact sum of ``values``."""
    out = math.fsum(values)
    if Fraction(out) < sum(map(Fraction, values), Fraction(0)):
        out = math.nextafter(out, math.inf)
    return out


@dataclass(frozen=True)
class Charge:
    """One recorded release: what was released, by which mechanism, noise scale, privacy cost."""

    what: str
    mechanism: str
    scale: float | None
    cost: Budget


def _fmt(b: Budget) -> str:
    if isinstance(b, ApproxDP):
        return f"(eps={b.epsilon:.6g}, delta={b.delta:.3g})"
    if isinstance(b, ZCDP):
        return f"rho={b.rho:.6g}"
    return f"eps={b.epsilon:.6g}"


class Accountant:
    """Privacy odometer with a fixed total budget; see the module docstring for the rules.

    Args:
        total_budget (PureDP | ZCDP | ApproxDP): The hard limit; its type is the accountant's
            notion.
        conversion ({"cks", "lemma_2_14"}): zCDP → (ε, δ) conversion used by an ``ApproxDP``
            accountant (default ``"cks"``).
    """

    def __init__(self, total_budget: Budget, *, conversion: ConversionMethod = "cks"):
        if not isinstance(total_budget, PureDP | ZCDP | ApproxDP):
            raise PrivacyParameterError(
                f"total_budget must be PureDP, ZCDP or ApproxDP, got {total_budget!r}"
            )
        if conversion not in ("cks", "ckks", "lemma_2_14"):
            raise PrivacyParameterError(f"unknown conversion method {conversion!r}")
        self._total = total_budget
        self._conversion = conversion
        self._charges: list[Charge] = []
        self._lock = threading.RLock()

    def __getstate__(self) -> dict:
        with self._lock:
            state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    # -- bookkeeping -------------------------------------------------------------------------
    @property
    def total(self) -> Budget:
        """The total budget."""
        return self._total

    @property
    def charges(self) -> tuple[Charge, ...]:
        """All recorded charges, in order."""
        with self._lock:
            return tuple(self._charges)

    def _normalise(self, cost: Budget) -> Budget:
        """``cost`` in a notion this accountant adds up, or PrivacyParameterError."""
        if not isinstance(cost, PureDP | ZCDP | ApproxDP):
            raise PrivacyParameterError(f"cost must be PureDP, ZCDP or ApproxDP, got {cost!r}")
        if isinstance(cost, ApproxDP) and cost.delta == 0:
            cost = PureDP(cost.epsilon)
        total = self._total
        if isinstance(total, PureDP):
            if not isinstance(cost, PureDP):
                raise PrivacyParameterError(
                    f"a pure-DP accountant cannot accept a {type(cost).__name__} charge"
                )
            return cost
        if isinstance(total, ZCDP):
            if isinstance(cost, ApproxDP):
                raise PrivacyParameterError(
                    "a zCDP accountant cannot accept an (epsilon, delta>0) charge"
                )
            return cost.to_zcdp() if isinstance(cost, PureDP) else cost
        return cost

    def _spent_of(self, costs: list[Budget], exact: bool = False) -> Budget | None:
        """Total spent by ``costs`` in the accountant's notion; ``None`` if not representable.
        ``exact``: a pure or zCDP total is the smallest float at or above the exact sum (what
        :attr:`spent` reports: never below what was composed, and the total itself when the
        costs add up to it), else the nearest float (``math.fsum``)."""
        total = self._total
        add = _sum_up if exact else math.fsum
        if isinstance(total, PureDP):
            return _unchecked(PureDP, epsilon=add([c.epsilon for c in costs]))
        if isinstance(total, ZCDP):
            return _unchecked(ZCDP, rho=add([c.rho for c in costs]))
        eps_pure = math.fsum(c.epsilon for c in costs if isinstance(c, PureDP))
        eps_apx = math.fsum(c.epsilon for c in costs if isinstance(c, ApproxDP))
        d_apx = math.fsum(c.delta for c in costs if isinstance(c, ApproxDP))
        rho = math.fsum(c.rho for c in costs if isinstance(c, ZCDP))
        if rho == 0:
            return _unchecked(ApproxDP, epsilon=eps_pure + eps_apx, delta=d_apx)
        d_rho = total.delta - d_apx
        if d_rho <= 0:
            return None
        eps_rho = zcdp_to_approx_dp(rho, d_rho, self._conversion).epsilon
        return _unchecked(ApproxDP, epsilon=eps_pure + eps_apx + eps_rho, delta=total.delta)

    def _fits(self, spent: Budget | None) -> bool:
        if spent is None:
            return False
        total = self._total
        if isinstance(total, ZCDP):
            return spent.rho <= total.rho * (1 + _TOL)
        ok = spent.epsilon <= total.epsilon * (1 + _TOL)
        if isinstance(total, ApproxDP):
            ok = ok and spent.delta <= total.delta * (1 + _TOL)
        return ok

    def _recorded(self) -> list[Budget]:
        with self._lock:
            return [self._normalise(c.cost) for c in self._charges]

    @property
    def spent(self) -> Budget:
        """Budget spent so far, in the accountant's notion (may be zero)."""
        with self._lock:
            out = self._spent_of(self._recorded(), exact=True)
        assert out is not None  # every recorded charge fitted
        return out

    @property
    def remaining(self) -> Budget:
        """``total - spent`` componentwise, floored at 0 (for ``ApproxDP``: ``δ_T - δ_apx``)."""
        with self._lock:
            total, spent, recorded = self._total, self.spent, self._recorded()
        if isinstance(total, ZCDP):
            return _unchecked(ZCDP, rho=max(total.rho - spent.rho, 0.0))
        eps = max(total.epsilon - spent.epsilon, 0.0)
        if isinstance(total, PureDP):
            return _unchecked(PureDP, epsilon=eps)
        d_apx = math.fsum(c.delta for c in recorded if isinstance(c, ApproxDP))
        return _unchecked(ApproxDP, epsilon=eps, delta=max(total.delta - d_apx, 0.0))

    # -- charging ------------------------------------------------------------------------------
    def can_afford(self, cost: Budget) -> bool:
        """Whether ``cost`` fits now (raises PrivacyParameterError if the notion is refused)."""
        new = self._normalise(cost)
        with self._lock:
            return self._fits(self._spent_of(self._recorded() + [new]))

    def check(self, cost: Budget, *, what: str = "") -> None:
        """Raise :class:`BudgetExceededError` if ``cost`` does not fit; records nothing."""
        with self._lock:
            if not self.can_afford(cost):
                label = f" for {what!r}" if what else ""
                raise BudgetExceededError(
                    f"privacy budget exceeded{label}: spent {_fmt(self.spent)}, asked "
                    f"{_fmt(cost)}, total {_fmt(self._total)}; nothing was charged or released"
                )

    def charge(
        self, cost: Budget, *, what: str, mechanism: str, scale: float | None = None
    ) -> Charge:
        """Record ``cost`` if it fits, else raise :class:`BudgetExceededError` recording nothing.
        Atomic: the check and the record happen under the accountant's lock."""
        rec = Charge(str(what), str(mechanism), None if scale is None else float(scale), cost)
        with self._lock:
            self.check(cost, what=what)
            self._charges.append(rec)
        return rec

    # -- reporting -----------------------------------------------------------------------------
    def report(self):
        """Charges as a pandas DataFrame (columns what, mechanism, scale, cost, eps, delta, rho)."""
        import pandas as pd

        rows = []
        for c in self.charges:
            cost = c.cost
            rows.append(
                {
                    "what": c.what,
                    "mechanism": c.mechanism,
                    "scale": c.scale,
                    "cost": type(cost).__name__,
                    "epsilon": getattr(cost, "epsilon", float("nan")),
                    "delta": getattr(cost, "delta", 0.0 if isinstance(cost, PureDP) else math.nan),
                    "rho": getattr(cost, "rho", float("nan")),
                }
            )
        cols = ["what", "mechanism", "scale", "cost", "epsilon", "delta", "rho"]
        return pd.DataFrame(rows, columns=cols)

    def __repr__(self) -> str:
        return (
            f"Accountant(total={_fmt(self._total)}, spent={_fmt(self.spent)}, "
            f"charges={len(self.charges)})"
        )

    def __str__(self) -> str:
        lines = [repr(self)]
        for i, c in enumerate(self.charges):
            sc = "-" if c.scale is None else f"{c.scale:.6g}"
            lines.append(f"  {i:3d}  {c.what:<30} {c.mechanism:<18} scale={sc:<10} {_fmt(c.cost)}")
        return "\n".join(lines)


def check_accountant(accountant: object, name: str = "accountant") -> Accountant | None:
    """``accountant`` if it is ``None`` or an :class:`Accountant`; otherwise
    :class:`~pgm_dp.errors.PrivacyParameterError` (a ``ValueError``) naming the parameter.

    >>> check_accountant(None) is None
    True
    """
    if accountant is None or isinstance(accountant, Accountant):
        return accountant
    raise PrivacyParameterError(
        f"{name} must be a pgm_dp.privacy.Accountant or None, got {accountant!r}"
    )
