"""Privacy accounting for DP-SGD (Abadi et al. 2016) via Google's ``dp_accounting``.

DP-SGD with Poisson sampling rate ``q``, noise multiplier ``z`` (Gaussian noise of standard
deviation ``z`` times the clipping norm) and ``T`` steps is the event
``SelfComposed(PoissonSampled(q, Gaussian(z)), T)`` under add/remove-one neighbours. Its
``(ε, δ)`` is computed with the RDP accountant (``accountant="rdp"``, default; Mironov 2017,
Mironov, Talwar & Zhang 2019) or the privacy-loss-distribution accountant (``"pld"``; tighter,
slower; Koskela et al. 2020, Doroshenko et al. 2022).

Example
-------
>>> eps = dpsgd_epsilon(1.1, 0.01, 1000, 1e-5)
>>> round(eps, 2) > 0
True
>>> z = calibrate_noise_multiplier(ApproxDP(eps, 1e-5), 0.01, 1000)
>>> abs(z - 1.1) < 1e-3
True
"""

from __future__ import annotations

import functools
import logging
import math
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..errors import PrivacyParameterError
from .budget import ApproxDP, require_budget

if TYPE_CHECKING:  # dp_accounting is imported lazily (it takes ~0.5 s to import)
    import dp_accounting

__all__ = [
    "DPSGDCost",
    "dpsgd_event",
    "dpsgd_epsilon",
    "dpsgd_cost",
    "calibrate_noise_multiplier",
]

AccountantKind = Literal["rdp", "pld"]
_PLD_DISCRETISATION = 1e-4


def _check(noise_multiplier: float, sampling_rate: float, steps: int) -> tuple[float, float, int]:
    z, q = float(noise_multiplier), float(sampling_rate)
    if not math.isfinite(z) or z <= 0:
        raise PrivacyParameterError(f"noise_multiplier must be finite and > 0, got {z}")
    if not math.isfinite(q) or not 0 < q <= 1:
        raise PrivacyParameterError(f"sampling_rate must be in (0, 1], got {q}")
    if isinstance(steps, bool) or int(steps) != steps or int(steps) < 1:
        raise PrivacyParameterError(f"steps must be a positive integer, got {steps!r}")
    return z, q, int(steps)


def _check_delta(delta: float) -> float:
    d = float(delta)
    if not 0 < d < 1:
        raise PrivacyParameterError(f"delta must be in (0, 1) for DP-SGD, got {delta}")
    return d


def _drop_dp_accounting_warnings(record: logging.LogRecord) -> bool:
    """Keep a record unless it is below ERROR and dp_accounting is on the logging call's stack.

    The stack, not ``record.pathname``: when the ``absl`` logger was created before
    ``absl.logging`` was imported it is a plain ``Logger`` and names absl's own file."""
    if record.levelno >= logging.ERROR:
        return True
    frame = sys._getframe(1)
    while frame is not None:
        if "dp_accounting" in frame.f_code.co_filename:
            return False
        frame = frame.f_back
    return True


@functools.cache
def _quiet_dp_accounting() -> None:
    """dp_accounting logs through absl a warning for each RDP order it leaves out of the bound
    (``_compute_log_a_frac failed to converge``: ten per DP-SGD fit at small epsilon); the
    bound stays valid, so those records, and only dp_accounting's below ERROR, are dropped
    at the ``absl`` logger. The user's root logger and other absl users are left alone."""
    import absl.logging  # noqa: F401  (absl's own logger class first, then the filter)

    logging.getLogger("absl").addFilter(_drop_dp_accounting_warnings)


def _make_accountant(
    kind: str, discretisation: float = _PLD_DISCRETISATION
) -> dp_accounting.PrivacyAccountant:
    _quiet_dp_accounting()
    if kind == "rdp":
        from dp_accounting.rdp import RdpAccountant

        return RdpAccountant()
    if kind == "pld":
        from dp_accounting.pld import PLDAccountant

        d = float(discretisation)
        if not math.isfinite(d) or not 0 < d <= 0.1:
            raise PrivacyParameterError(f"pld_discretization must be in (0, 0.1], got {d}")
        return PLDAccountant(value_discretization_interval=d)
    raise PrivacyParameterError(f"accountant must be 'rdp' or 'pld', got {kind!r}")


def dpsgd_event(noise_multiplier: float, sampling_rate: float, steps: int) -> dp_accounting.DpEvent:
    """The ``dp_accounting`` event of ``steps`` Poisson-subsampled Gaussian steps."""
    import dp_accounting

    z, q, t = _check(noise_multiplier, sampling_rate, steps)
    step = dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z))
    return dp_accounting.SelfComposedDpEvent(step, t)


def dpsgd_epsilon(
    noise_multiplier: float,
    sampling_rate: float,
    steps: int,
    delta: float,
    accountant: AccountantKind = "rdp",
    *,
    pld_discretization: float = _PLD_DISCRETISATION,
) -> float:
    """``ε`` at ``δ`` of DP-SGD with the given parameters (Abadi et al. 2016).

    Args:
        noise_multiplier: ``σ``, the Gaussian's standard deviation over the clipping norm.
        sampling_rate: ``q``, each record's Poisson sampling probability per step.
        steps: The number of noisy steps.
        delta: The ``δ`` at which ``ε`` is reported.
        accountant: ``"rdp"`` (Mironov et al. 2019) or ``"pld"`` (privacy loss
            distributions, tighter).
        pld_discretization: Value discretisation interval of the PLD accountant (smaller is
            tighter and slower; the PLD bound is pessimistic for any value).
    """
    event = dpsgd_event(noise_multiplier, sampling_rate, steps)
    d = _check_delta(delta)
    acc = _make_accountant(accountant, pld_discretization)
    return float(acc.compose(event).get_epsilon(d))


@dataclass(frozen=True)
class DPSGDCost:
    """The parameters of a DP-SGD run and the ``(ε, δ)`` it spends (:attr:`cost`)."""

    noise_multiplier: float
    sampling_rate: float
    steps: int
    delta: float
    accountant: AccountantKind = "rdp"
    pld_discretization: float = _PLD_DISCRETISATION

    def __post_init__(self) -> None:
        z, q, t = _check(self.noise_multiplier, self.sampling_rate, self.steps)
        object.__setattr__(self, "noise_multiplier", z)
        object.__setattr__(self, "sampling_rate", q)
        object.__setattr__(self, "steps", t)
        object.__setattr__(self, "delta", _check_delta(self.delta))
        _make_accountant(self.accountant, self.pld_discretization)

    @property
    def cost(self) -> ApproxDP:
        """``ApproxDP(ε, δ)`` to charge an :class:`~pgm_dp.privacy.accountant.Accountant`."""
        return dpsgd_cost(
            self.noise_multiplier,
            self.sampling_rate,
            self.steps,
            self.delta,
            self.accountant,
            pld_discretization=self.pld_discretization,
        )


def dpsgd_cost(
    noise_multiplier: float,
    sampling_rate: float,
    steps: int,
    delta: float,
    accountant: AccountantKind = "rdp",
    *,
    pld_discretization: float = _PLD_DISCRETISATION,
) -> ApproxDP:
    """``ApproxDP(ε, δ)`` spent by DP-SGD, for :meth:`Accountant.charge`.

    >>> dpsgd_cost(1.1, 0.01, 100, 1e-5).delta
    1e-05

    With very much noise the accounting gives ``ε = 0`` (a valid ``(0, δ)`` bound, which
    :class:`~pgm_dp.privacy.ApproxDP` cannot hold): the smallest positive normal float is
    charged instead, a slightly larger, still valid, cost.
    """
    eps = dpsgd_epsilon(
        noise_multiplier,
        sampling_rate,
        steps,
        delta,
        accountant,
        pld_discretization=pld_discretization,
    )
    return ApproxDP(max(eps, sys.float_info.min), delta)


def calibrate_noise_multiplier(
    target: ApproxDP,
    sampling_rate: float,
    steps: int,
    accountant: AccountantKind = "rdp",
    tol: float = 1e-6,
    *,
    pld_discretization: float = _PLD_DISCRETISATION,
) -> float:
    """Smallest noise multiplier ``z >= 0.05`` (within ``tol``) whose DP-SGD ``ε`` at
    ``target.delta`` is at most ``target.epsilon``.

    Args:
        target: The ``(ε, δ)`` to meet.
        sampling_rate: ``q``, each record's Poisson sampling probability per step.
        steps: The number of noisy steps.
        accountant: ``"rdp"`` or ``"pld"`` (:func:`dpsgd_epsilon`).
        tol: The search's tolerance on the multiplier.
        pld_discretization: As in :func:`dpsgd_epsilon`.

    Uses ``dp_accounting.calibrate_dp_mechanism``, which guarantees that the returned value
    meets the target; returns 0.05 if even that little noise meets it. The result depends
    only on these public arguments and is cached (a calibration takes ~1 s), so repeated
    fits with one budget and schedule calibrate once.
    """
    require_budget(target, ApproxDP, f"target must be an ApproxDP budget, got {target!r}")
    _check(1.0, sampling_rate, steps)
    d = _check_delta(target.delta)
    _make_accountant(accountant, pld_discretization)
    return _calibrated(
        float(target.epsilon),
        d,
        float(sampling_rate),
        int(steps),
        accountant,
        float(tol),
        float(pld_discretization),
    )


@functools.lru_cache(maxsize=256)
def _calibrated(
    epsilon: float,
    d: float,
    sampling_rate: float,
    steps: int,
    accountant: AccountantKind,
    tol: float,
    pld_discretization: float,
) -> float:
    """:func:`calibrate_noise_multiplier` on validated arguments (cached)."""
    import dp_accounting

    target = ApproxDP(epsilon, d)

    def event(z: float) -> dp_accounting.DpEvent:
        return dpsgd_event(z, sampling_rate, steps)

    lower = 0.05
    if accountant == "pld":  # RDP is looser: its calibration is a valid upper end for PLD
        upper = calibrate_noise_multiplier(target, sampling_rate, steps, "rdp", tol)
        if upper <= lower:
            return lower
        low = upper
        while low > lower:
            low = max(low * 0.85, lower)  # PLD is usually within ~15% of RDP
            eps_low = dpsgd_epsilon(
                low, sampling_rate, steps, d, "pld", pld_discretization=pld_discretization
            )
            if eps_low > target.epsilon:
                break
        bracket = dp_accounting.ExplicitBracketInterval(low, upper)
    else:
        if dpsgd_epsilon(lower, sampling_rate, steps, d, "rdp") <= target.epsilon:
            return lower
        bracket = dp_accounting.LowerEndpointAndGuess(lower, 1.0)
    z = dp_accounting.calibrate_dp_mechanism(
        lambda: _make_accountant(accountant, pld_discretization),
        event,
        target.epsilon,
        d,
        bracket_interval=bracket,
        tol=tol,
    )
    return float(z)
