"""Privacy budgets (pure DP, zCDP, approximate DP), their conversions and composition.

Values are frozen dataclasses validated on construction (``ε <= 0`` or non-finite, ``ρ <= 0``,
``δ ∉ [0, 1)`` raise :class:`~pgm_dp.errors.PrivacyParameterError`).

Conversions (Zhang et al. 2020, Lemma 2.14; Bun & Steinke 2016):

* ``ε``-DP ⇒ ``ε²/2``-zCDP (:meth:`PureDP.to_zcdp`).
* ``ρ``-zCDP ⇒ ``(ε, δ)``-DP (:meth:`ZCDP.to_approx_dp`), two methods:

  - ``"lemma_2_14"``: ``ε = ρ + 2 sqrt(ρ log(1/δ))`` (Zhang et al. Lemma 2.14).
  - ``"cks"`` (**default**; alias ``"ckks"``): Canonne, Kamath & Steinke 2020, Corollary 13,
    ``ε = inf_{α>1} αρ + (log(1/δ) - log α)/(α-1) + log(1 - 1/α)``, never larger than
    Lemma 2.14 (the infimum is taken numerically; every ``α > 1`` gives a valid ``ε``, and the
    Lemma 2.14 optimiser ``α = 1 + sqrt(log(1/δ)/ρ)`` is always among the candidates).

Algebra: every budget knows its ``notion`` (the unit the mechanisms spend: ``"pure"`` ``ε``
or ``"zcdp"`` ``ρ``; ``(ε, δ)`` with ``δ > 0`` is held as the largest ``ρ`` whose conversion
fits, :meth:`ApproxDP.rho_within`), its ``amount`` in that unit, :meth:`~PureDP.split` (a
share of itself), :meth:`~PureDP.scale_for` (the noise scale it buys directly),
:meth:`~PureDP.pure_steps` (the ``ε`` of each of ``m`` pure-DP steps that compose to it) and
:meth:`~PureDP.cost_of_pure` (``m`` pure-DP charges in its own notion). The notion's
constants and formulas live on its type (:mod:`.notions`; :func:`notion_type`): ``is_pure``, the
``mechanisms`` it measures with (``default_mechanism``), the noise scale a cost buys
(``noise_scale``), ``scale_of_variance``, ``expected_abs_noise``, ``halving_cost``, the
exponential mechanism's ``selection_epsilon``/``selection_cost`` and
``measurements_within``. Call sites ask the budget instead of switching on its type or
comparing notion strings; :func:`budget_of` builds one from a notion and an amount,
:func:`require_budget` refuses a type a caller does not take.

Composition (:func:`compose`): zCDP parameters add (Zhang et al. Lemma 2.15); pure and
approximate DP use basic composition (``ε`` and ``δ`` add). Mixing notions is the job of
:class:`~pgm_dp.privacy.accountant.Accountant`.

Example
-------
>>> from pgm_dp.privacy import PureDP, ZCDP, compose
>>> PureDP(1.0).to_zcdp()
ZCDP(rho=0.5)
>>> compose(ZCDP(0.1), ZCDP(0.2)).rho
0.30000000000000004
>>> round(ZCDP(0.5).to_approx_dp(1e-6, method="lemma_2_14").epsilon, 4)
5.7565
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy.optimize import minimize_scalar

from ..errors import PrivacyParameterError
from .notions import PureAlgebra, ZCDPAlgebra

__all__ = [
    "PureDP",
    "ZCDP",
    "ApproxDP",
    "Budget",
    "compose",
    "zcdp_to_approx_dp",
    "zcdp_rho_within",
    "budget_of",
    "notion_type",
    "as_zcdp",
    "require_budget",
    "ConversionMethod",
    "budget_text",
]

ConversionMethod = Literal["cks", "ckks", "lemma_2_14"]


def _real(x: object, name: str) -> float:
    # numbers only: "1" would parse as 1.0 and True as 1 (issue #16)
    if isinstance(x, bool | np.bool_) or not isinstance(x, numbers.Real):
        raise PrivacyParameterError(f"{name} must be a real number, got {x!r}")
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise PrivacyParameterError(f"{name} must be a real number, got {x!r}") from None
    if not math.isfinite(v):
        raise PrivacyParameterError(f"{name} must be finite, got {x!r}")
    return v


def _check_delta(delta: object) -> float:
    d = _real(delta, "delta")
    if not 0.0 <= d < 1.0:
        raise PrivacyParameterError(f"delta must be in [0, 1), got {delta!r}")
    return d


@dataclass(frozen=True)
class PureDP(PureAlgebra):
    """``ε``-differential privacy (``ε > 0``, finite)."""

    epsilon: float

    def __post_init__(self) -> None:
        e = _real(self.epsilon, "epsilon")
        if e <= 0:
            raise PrivacyParameterError(f"epsilon must be > 0, got {self.epsilon!r}")
        object.__setattr__(self, "epsilon", e)

    def to_zcdp(self) -> ZCDP:
        """``ε``-DP ⇒ ``ε²/2``-zCDP (Zhang et al. Lemma 2.14; Bun & Steinke Prop. 1.4)."""
        return ZCDP(self.epsilon**2 / 2)

    def to_approx_dp(self) -> ApproxDP:
        """``ε``-DP is ``(ε, 0)``-DP."""
        return ApproxDP(self.epsilon, 0.0)

    notion = property(lambda self: "pure", doc='``"pure"``: the mechanisms spend ``ε``.')
    amount = property(lambda self: self.epsilon, doc="``ε``.")

    def native(self) -> PureDP:
        """Itself: the budget in the unit the mechanisms spend."""
        return self

    def split(self, fraction: float) -> PureDP:
        """``fraction`` of this budget: ``ε · fraction`` (basic composition)."""
        return PureDP(self.epsilon * fraction)

    def rho_within(self, method: ConversionMethod = "cks") -> float:
        """No zCDP mechanism fits a pure-DP budget: a :class:`PrivacyParameterError`."""
        raise PrivacyParameterError(f"{self!r} admits no zCDP mechanism")

    def scale_for(self, family: str, sensitivity: float) -> float | None:
        """Laplace's ``b = Δ₁/ε`` for ``family="laplace"``; ``None`` otherwise."""
        return sensitivity / self.epsilon if family == "laplace" else None

    def pure_steps(self, m: int) -> PureDP:
        """The ``ε/m`` of each of ``m`` steps that compose (basic) to this budget."""
        return PureDP(self.epsilon / m)

    def cost_of_pure(self, each: PureDP, m: int) -> PureDP:
        """``m`` charges of ``each`` in this notion: ``m ε`` (basic composition)."""
        return PureDP(m * each.epsilon)

    def __add__(self, other: PureDP) -> PureDP:
        return compose(self, other)  # type: ignore[return-value]


@dataclass(frozen=True)
class ZCDP(ZCDPAlgebra):
    """``ρ``-zero-concentrated DP (Bun & Steinke 2016; Zhang et al. Def. 2.13), ``ρ > 0``."""

    rho: float

    def __post_init__(self) -> None:
        r = _real(self.rho, "rho")
        if r <= 0:
            raise PrivacyParameterError(f"rho must be > 0, got {self.rho!r}")
        object.__setattr__(self, "rho", r)

    def to_approx_dp(self, delta: float, method: ConversionMethod = "cks") -> ApproxDP:
        """``(ε, δ)``-DP implied by ``ρ``-zCDP; see :func:`zcdp_to_approx_dp`."""
        return zcdp_to_approx_dp(self.rho, delta, method)

    notion = property(lambda self: "zcdp", doc='``"zcdp"``: the mechanisms spend ``ρ``.')
    amount = property(lambda self: self.rho, doc="``ρ``.")

    def native(self) -> ZCDP:
        """Itself: the budget in the unit the mechanisms spend."""
        return self

    def split(self, fraction: float) -> ZCDP:
        """``fraction`` of this budget: ``ρ · fraction`` (Lemma 2.15)."""
        return ZCDP(self.rho * fraction)

    def rho_within(self, method: ConversionMethod = "cks") -> float:
        """``ρ`` itself."""
        return self.rho

    def scale_for(self, family: str, sensitivity: float) -> float | None:
        """The Gaussian's ``σ = Δ₂/sqrt(2ρ)`` (Bun & Steinke Prop. 1.6) for
        ``family="gaussian"``; ``None`` otherwise."""
        return sensitivity / math.sqrt(2 * self.rho) if family == "gaussian" else None

    def pure_steps(self, m: int) -> PureDP:
        """The ``ε = sqrt(2ρ/m)`` of each of ``m`` pure-DP steps, each ``ε²/2 = ρ/m``-zCDP
        (Zhang et al. Lemma 2.14), that compose to ``ρ`` (Lemma 2.15)."""
        return PureDP(math.sqrt(2 * self.rho / m))

    def cost_of_pure(self, each: PureDP, m: int) -> ZCDP:
        """``m`` charges of ``each`` in this notion: ``m ε²/2`` (Lemma 2.14, 2.15)."""
        return ZCDP(m * each.epsilon**2 / 2)

    def __add__(self, other: ZCDP) -> ZCDP:
        return compose(self, other)  # type: ignore[return-value]


@dataclass(frozen=True)
class ApproxDP:
    """``(ε, δ)``-differential privacy with ``ε > 0`` finite and ``0 <= δ < 1``."""

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        e = _real(self.epsilon, "epsilon")
        if e <= 0:
            raise PrivacyParameterError(f"epsilon must be > 0, got {self.epsilon!r}")
        object.__setattr__(self, "epsilon", e)
        object.__setattr__(self, "delta", _check_delta(self.delta))

    @property
    def notion(self) -> str:
        """``"pure"`` when ``δ = 0``, else ``"zcdp"`` (held as :meth:`rho_within`)."""
        return "pure" if self.delta == 0 else "zcdp"

    @property
    def amount(self) -> float:
        """``ε`` when ``δ = 0``, else the largest ``ρ`` that fits (:meth:`rho_within`)."""
        return self.native().amount

    @property
    def is_pure(self) -> bool:
        """Whether the mechanisms spend ``ε``: ``δ = 0``."""
        return self.delta == 0

    @property
    def mechanisms(self) -> tuple[str, str]:
        """Those of its notion (:attr:`PureDP.mechanisms` or :attr:`ZCDP.mechanisms`)."""
        return notion_type(self.notion).mechanisms

    @property
    def default_mechanism(self) -> str:
        """The mechanism a release takes when none is named (that of its notion)."""
        return self.mechanisms[0]

    def native(self) -> PureDP | ZCDP:
        """The budget in the unit the mechanisms spend: ``PureDP(ε)`` when ``δ = 0``, else
        ``ZCDP`` of the largest ``ρ`` whose CKS conversion fits (:meth:`rho_within`)."""
        return PureDP(self.epsilon) if self.delta == 0 else ZCDP(self.rho_within())

    def split(self, fraction: float) -> ApproxDP:
        """``fraction`` of this budget: ``(ε · fraction, δ · fraction)`` (basic)."""
        return ApproxDP(self.epsilon * fraction, self.delta * fraction)

    def rho_within(self, method: ConversionMethod = "cks") -> float:
        """The largest ``ρ`` whose zCDP → DP conversion fits (:func:`zcdp_rho_within`)."""
        return zcdp_rho_within(self, method)

    def scale_for(self, family: str, sensitivity: float) -> float | None:
        """``None``: an ``(ε, δ)`` budget buys no scale directly (calibrated instead)."""
        return None

    def pure_steps(self, m: int) -> PureDP:
        """Not defined for ``(ε, δ)``: a :class:`PrivacyParameterError`."""
        raise PrivacyParameterError(f"{self!r}: convert to PureDP or ZCDP first")

    def cost_of_pure(self, each: PureDP, m: int) -> PureDP:
        """``m`` charges of ``each`` (basic composition): ``m ε``."""
        return PureDP(m * each.epsilon)

    def __add__(self, other: ApproxDP) -> ApproxDP:
        return compose(self, other)  # type: ignore[return-value]


Budget = PureDP | ZCDP | ApproxDP


def notion_type(notion: str) -> type[PureDP] | type[ZCDP]:
    """The budget type whose mechanisms spend ``notion``: :class:`PureDP` (``"pure"``) or
    :class:`ZCDP` (``"zcdp"``); its class attributes and static methods hold the notion's
    constants and formulas (mechanisms, noise scale of a cost, selection cost, ...).

    Args:
        notion: ``"pure"`` or ``"zcdp"`` (a budget's :attr:`~PureDP.notion`).

    >>> notion_type("zcdp").mechanisms
    ('discrete_gaussian', 'gaussian')
    """
    if notion not in ("pure", "zcdp"):
        raise PrivacyParameterError(f"notion must be 'pure' or 'zcdp', got {notion!r}")
    return PureDP if notion == "pure" else ZCDP


def budget_of(notion: str, amount: float) -> PureDP | ZCDP:
    """The budget of ``amount`` in ``notion``: ``PureDP(ε)`` (``"pure"``) or ``ZCDP(ρ)``
    (``"zcdp"``), the inverse of ``(budget.notion, budget.amount)``."""
    return notion_type(notion)(amount)


def as_zcdp(rho: ZCDP | float) -> ZCDP:
    """``rho`` itself when it is a :class:`ZCDP`, else ``ZCDP(rho)`` (a bare ``ρ``, as the
    papers write it; validated)."""
    return rho if isinstance(rho, ZCDP) else ZCDP(rho)


def require_budget(
    budget: object,
    kinds: Any,
    message: str,
    error: type[Exception] = PrivacyParameterError,
) -> None:
    """``error(message)`` unless ``budget`` is one of ``kinds`` (a type, a tuple or a union):
    where a caller takes one notion only (the pure-DP exponential mechanism, DP-SGD's
    ``(ε, δ)``, ...)."""
    if not isinstance(budget, kinds):
        raise error(message)


def zcdp_rho_within(budget: ApproxDP, method: ConversionMethod = "cks") -> float:
    """Largest ``ρ`` (to 1e-12 relative) whose zCDP → DP conversion fits ``budget``.

    >>> rho = zcdp_rho_within(ApproxDP(1.0, 1e-6))
    >>> zcdp_to_approx_dp(rho, 1e-6).epsilon <= 1.0
    True
    """
    require_budget(budget, ApproxDP, f"zcdp_rho_within needs a ApproxDP budget, got {budget!r}")
    if budget.delta == 0:
        raise PrivacyParameterError("an (epsilon, 0) budget admits no zCDP mechanism")
    lo, hi = 0.0, budget.epsilon  # eps(rho) >= rho, so rho <= epsilon
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid == lo or mid == hi:
            break
        if zcdp_to_approx_dp(mid, budget.delta, method).epsilon <= budget.epsilon:
            lo = mid
        else:
            hi = mid
    if lo == 0:
        raise PrivacyParameterError(f"no zCDP level fits {budget!r}")
    return lo


def _unchecked(cls: type, **fields: float) -> Budget:
    """A budget value that may be zero (used for "spent"/"remaining"; skips validation)."""
    obj = object.__new__(cls)
    for k, v in fields.items():
        object.__setattr__(obj, k, float(v))
    return obj


def budget_text(budget: Budget, total: Budget | None = None) -> str:
    """``budget`` for a person, four significant digits (exact values stay in the files that
    hold them): ``"ε = 0.3333"``, ``"ρ = 0.01234"``, ``"(ε, δ) = (1, 1e-06)"``; with ``total``
    (a budget of the same notion, or whose :meth:`~ApproxDP.native` form is),
    ``"ε = 0.3333 (33.33 % of the total)"``.

    >>> budget_text(PureDP(1 / 3), PureDP(1.0))
    'ε = 0.3333 (33.33 % of the total)'
    >>> budget_text(ApproxDP(1.0, 1e-6)), budget_text(ZCDP(0.0123456))
    ('(ε, δ) = (1, 1e-06)', 'ρ = 0.01235')
    """
    if isinstance(budget, ApproxDP):
        text = f"(ε, δ) = ({budget.epsilon:.4g}, {budget.delta:.4g})"
    else:
        text = f"{'ε' if budget.notion == 'pure' else 'ρ'} = {budget.amount:.4g}"
    if total is None or isinstance(budget, ApproxDP):
        return text
    whole = total.native()
    if whole.notion != budget.notion or whole.amount <= 0:
        return text
    return f"{text} ({100 * budget.amount / whole.amount:.4g} % of the total)"


def compose(*costs: Budget) -> Budget:
    """Compose costs of one notion: ``ρ`` adds (Lemma 2.15); ``ε``, ``δ`` add (basic).

    >>> compose(PureDP(0.5), PureDP(0.25))
    PureDP(epsilon=0.75)
    """
    if not costs:
        raise PrivacyParameterError("compose needs at least one cost")
    kind = type(costs[0])
    if kind not in (PureDP, ZCDP, ApproxDP) or any(type(c) is not kind for c in costs):
        raise PrivacyParameterError(
            f"compose needs costs of one notion, got {[type(c).__name__ for c in costs]}; "
            "convert first or use an Accountant"
        )
    if kind is PureDP:
        return PureDP(math.fsum(c.epsilon for c in costs))  # type: ignore[union-attr]
    if kind is ZCDP:
        return ZCDP(math.fsum(c.rho for c in costs))  # type: ignore[union-attr]
    return ApproxDP(
        math.fsum(c.epsilon for c in costs),  # type: ignore[union-attr]
        math.fsum(c.delta for c in costs),  # type: ignore[union-attr]
    )


def _cks_eps(alpha: float, rho: float, log_inv_delta: float) -> float:
    return alpha * rho + (log_inv_delta - math.log(alpha)) / (alpha - 1) + math.log1p(-1.0 / alpha)


def zcdp_to_approx_dp(rho: float, delta: float, method: ConversionMethod = "cks") -> ApproxDP:
    """``ρ``-zCDP ⇒ ``(ε, δ)``-DP.

    Args:
        rho: ``ρ >= 0``.
        delta: ``δ`` in ``(0, 1)``.
        method: ``"lemma_2_14"``: ``ε = ρ + 2 sqrt(ρ log(1/δ))`` (Zhang et al. Lemma 2.14);
            ``"cks"`` (default, alias ``"ckks"``): Canonne-Kamath-Steinke 2020 Cor. 13,
            tighter.

    >>> e1 = zcdp_to_approx_dp(0.1, 1e-5, "lemma_2_14").epsilon
    >>> e2 = zcdp_to_approx_dp(0.1, 1e-5, "cks").epsilon
    >>> e2 < e1
    True
    """
    r = _real(rho, "rho")
    if r <= 0:
        raise PrivacyParameterError(f"rho must be > 0, got {rho!r}")
    d = _check_delta(delta)
    if d == 0:
        raise PrivacyParameterError("zCDP implies (epsilon, delta)-DP only for delta > 0")
    log_inv = math.log(1.0 / d)
    eps_lemma = r + 2.0 * math.sqrt(r * log_inv)
    if method == "lemma_2_14":
        return ApproxDP(eps_lemma, d)
    if method not in ("cks", "ckks"):
        raise PrivacyParameterError(f"unknown conversion method {method!r}")
    a_lemma = 1.0 + math.sqrt(log_inv / r)
    grid = 1.0 + np.logspace(-6, 8, 400)
    vals = [_cks_eps(float(a), r, log_inv) for a in grid]
    i = int(np.argmin(vals))
    lo = math.log(grid[max(i - 1, 0)] - 1.0)
    hi = math.log(grid[min(i + 1, len(grid) - 1)] - 1.0)
    res = minimize_scalar(
        lambda u: _cks_eps(1.0 + math.exp(u), r, log_inv),
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": 1e-10},
    )
    best = min(float(res.fun), vals[i], _cks_eps(a_lemma, r, log_inv), eps_lemma)
    # a non-positive bound means (0, delta)-DP; any epsilon > 0 is then valid
    return ApproxDP(max(best, 1e-300), d)
