"""Statistical auditing of DP claims from samples on two neighbouring inputs.

If a mechanism ``M`` is ``(ε, δ)``-DP then for neighbouring inputs ``a, b`` and **every** event
``E`` fixed in advance, ``P[M(a) ∈ E] <= e^ε P[M(b) ∈ E] + δ``. Given ``n_a`` outputs on ``a`` and
``n_b`` on ``b``, each event gives the lower confidence bound

    ``ε̂(E) = log((p̂_a^lo(E) - δ) / p̂_b^hi(E))``

with one-sided Clopper-Pearson bounds ``p̂^lo, p̂^hi``. Both directions (``a`` vs ``b`` and
``b`` vs ``a``) and all ``m`` candidate events are tested; every bound uses level
``α / (4m)`` (Bonferroni), so **if the claim holds, the probability that the returned
``epsilon_lower`` exceeds the true ``ε`` is at most ``α``** (the false-alarm rate). The events
must not be chosen from the samples: pass a threshold grid or a category list fixed beforehand.
This is the classical "hypothesis test over events" audit (Ding et al. 2018, StatDP; Jagielski
et al. 2020 for Clopper-Pearson bounds).

Example
-------
>>> import numpy as np
>>> from pgm_dp.privacy.samplers import sample_laplace
>>> xa = 1.0 + sample_laplace(1.0, 100_000, rng=0)    # Laplace mechanism, eps = 1
>>> xb = 0.0 + sample_laplace(1.0, 100_000, rng=1)
>>> res = audit_thresholds(xa, xb, thresholds=np.linspace(-3, 4, 15), alpha=1e-3)
>>> 0.8 < res.epsilon_lower <= 1.0
True
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import beta

from ..errors import PrivacyParameterError
from ..rng import RngLike, as_generator

__all__ = [
    "AuditResult",
    "clopper_pearson",
    "epsilon_lower_bound",
    "audit_thresholds",
    "audit_categorical",
    "privacy_loss_statistic_laplace",
    "SupportAuditResult",
    "audit_lattice_support",
    "StableModeAudit",
    "audit_stable_mode",
    "delta_lower_bound",
]


@dataclass(frozen=True)
class AuditResult:
    """Lower confidence bound on ``ε`` (at ``delta``) with family-wise false-alarm ``alpha``."""

    epsilon_lower: float
    event: str
    alpha: float
    delta: float
    n_a: int
    n_b: int

    def consistent_with(self, epsilon: float) -> bool:
        """``True`` unless the samples refute an ``(epsilon, delta)`` claim at level ``alpha``."""
        return self.epsilon_lower <= epsilon


def clopper_pearson(k: np.ndarray, n: int, level: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided exact binomial bounds: ``P[p < lo] <= level`` and ``P[p > hi] <= level``.

    >>> lo, hi = clopper_pearson(np.array([50]), 100, 0.025)
    >>> bool(lo[0] < 0.5 < hi[0])
    True
    """
    k = np.asarray(k, dtype=np.float64)
    lo = np.where(k > 0, beta.ppf(level, k, n - k + 1), 0.0)
    hi = np.where(k < n, beta.ppf(1 - level, k + 1, n - k), 1.0)
    return lo, hi


def epsilon_lower_bound(
    counts_a: np.ndarray,
    counts_b: np.ndarray,
    n_a: int,
    n_b: int,
    *,
    delta: float = 0.0,
    alpha: float = 1e-3,
    labels: Sequence[str] | None = None,
) -> AuditResult:
    """Max over events and directions of ``log((p_lo - δ)/p_hi)``; Bonferroni level ``α/(4m)``.

    ``counts_a[i]``/``counts_b[i]``: number of outputs in event ``i`` on inputs ``a``/``b``.
    """
    ca = np.asarray(counts_a, dtype=np.int64)
    cb = np.asarray(counts_b, dtype=np.int64)
    if ca.shape != cb.shape or ca.ndim != 1 or ca.size == 0:
        raise PrivacyParameterError("counts_a and counts_b must be equal-length 1-d arrays")
    if not 0 < alpha < 1 or not 0 <= delta < 1:
        raise PrivacyParameterError("need 0 < alpha < 1 and 0 <= delta < 1")
    level = alpha / (4 * ca.size)
    lo_a, hi_a = clopper_pearson(ca, n_a, level)
    lo_b, hi_b = clopper_pearson(cb, n_b, level)
    with np.errstate(divide="ignore", invalid="ignore"):
        e_ab = np.log(np.maximum(lo_a - delta, 0.0) / hi_b)
        e_ba = np.log(np.maximum(lo_b - delta, 0.0) / hi_a)
    both = np.concatenate([e_ab, e_ba])
    both = np.where(np.isnan(both), -np.inf, both)
    i = int(np.argmax(both))
    names = list(labels) if labels is not None else [f"event {j}" for j in range(ca.size)]
    direction = "a vs b" if i < ca.size else "b vs a"
    return AuditResult(
        epsilon_lower=float(max(both[i], 0.0)),
        event=f"{names[i % ca.size]} ({direction})",
        alpha=alpha,
        delta=delta,
        n_a=int(n_a),
        n_b=int(n_b),
    )


def audit_thresholds(
    out_a: np.ndarray,
    out_b: np.ndarray,
    *,
    thresholds: Sequence[float],
    delta: float = 0.0,
    alpha: float = 1e-3,
) -> AuditResult:
    """Audit scalar outputs with the events ``{x <= t}`` and ``{x >= t}`` for a fixed grid."""
    xa = np.asarray(out_a, dtype=np.float64).ravel()
    xb = np.asarray(out_b, dtype=np.float64).ravel()
    t = np.asarray(thresholds, dtype=np.float64)
    sa, sb = np.sort(xa), np.sort(xb)
    le_a = np.searchsorted(sa, t, side="right")
    le_b = np.searchsorted(sb, t, side="right")
    ge_a = xa.size - np.searchsorted(sa, t, side="left")
    ge_b = xb.size - np.searchsorted(sb, t, side="left")
    labels = [f"x <= {v:g}" for v in t] + [f"x >= {v:g}" for v in t]
    return epsilon_lower_bound(
        np.concatenate([le_a, ge_a]),
        np.concatenate([le_b, ge_b]),
        xa.size,
        xb.size,
        delta=delta,
        alpha=alpha,
        labels=labels,
    )


def audit_categorical(
    out_a: np.ndarray,
    out_b: np.ndarray,
    *,
    categories: Sequence[int],
    delta: float = 0.0,
    alpha: float = 1e-3,
) -> AuditResult:
    """Audit categorical outputs with the events ``{x = c}`` and ``{x != c}`` for fixed ``c``."""
    xa, xb = np.asarray(out_a).ravel(), np.asarray(out_b).ravel()
    cats = list(categories)
    eq_a = np.array([np.sum(xa == c) for c in cats])
    eq_b = np.array([np.sum(xb == c) for c in cats])
    labels = [f"x = {c}" for c in cats] + [f"x != {c}" for c in cats]
    return epsilon_lower_bound(
        np.concatenate([eq_a, xa.size - eq_a]),
        np.concatenate([eq_b, xb.size - eq_b]),
        xa.size,
        xb.size,
        delta=delta,
        alpha=alpha,
        labels=labels,
    )


def privacy_loss_statistic_laplace(
    outputs: np.ndarray, mean_a: np.ndarray, mean_b: np.ndarray, scale: float
) -> np.ndarray:
    """``log p_a(y)/p_b(y)`` for Laplace noise of ``scale`` (rows of ``outputs`` are releases).

    A fixed post-processing of each release, so thresholding it gives valid audit events; it
    is the most powerful statistic for the (claimed) Laplace model.
    """
    y = np.asarray(outputs, dtype=np.float64)
    if not math.isfinite(scale) or scale <= 0:
        raise PrivacyParameterError("scale must be finite and > 0")
    ma, mb = np.asarray(mean_a, np.float64), np.asarray(mean_b, np.float64)
    return np.sum(np.abs(y - mb) - np.abs(y - ma), axis=-1) / scale


# -- propose-test-release on a stable mode ------------------------------------------------------


def delta_lower_bound(
    counts_a: np.ndarray,
    counts_b: np.ndarray,
    n_a: int,
    n_b: int,
    *,
    epsilon: float,
    alpha: float = 1e-3,
) -> float:
    """Max over events and directions of ``p_lo - e^ε p_hi`` (floored at 0), Bonferroni level
    ``α/(4m)``: if the mechanism is ``(ε, δ)``-DP the result exceeds ``δ`` with probability at
    most ``α``.

    >>> delta_lower_bound([500], [0], 1000, 1000, epsilon=1.0) > 0.4
    True
    """
    ca = np.asarray(counts_a, dtype=np.int64)
    cb = np.asarray(counts_b, dtype=np.int64)
    if ca.shape != cb.shape or ca.ndim != 1 or ca.size == 0:
        raise PrivacyParameterError("counts_a and counts_b must be equal-length 1-d arrays")
    if not 0 < alpha < 1 or not (math.isfinite(epsilon) and epsilon >= 0):
        raise PrivacyParameterError("need 0 < alpha < 1 and a finite epsilon >= 0")
    level = alpha / (4 * ca.size)
    lo_a, hi_a = clopper_pearson(ca, n_a, level)
    lo_b, hi_b = clopper_pearson(cb, n_b, level)
    gap = np.concatenate([lo_a - math.exp(epsilon) * hi_b, lo_b - math.exp(epsilon) * hi_a])
    return float(max(np.max(gap), 0.0))


@dataclass(frozen=True)
class StableModeAudit:
    """Empirical lower bounds for a mechanism claiming ``(epsilon, delta)``-DP:
    ``epsilon_lower`` at ``delta`` and ``delta_lower`` at ``epsilon``; together their
    false-alarm rate is at most ``alpha``."""

    epsilon_lower: float
    delta_lower: float
    epsilon: float
    delta: float
    event: str
    alpha: float
    trials: int

    def consistent(self) -> bool:
        """``True`` unless the samples refute the ``(epsilon, delta)`` claim at level alpha."""
        return self.epsilon_lower <= self.epsilon and self.delta_lower <= self.delta


def audit_stable_mode(
    mechanism: Callable[[list, np.random.Generator], Hashable | None],
    votes_a: Sequence[Hashable],
    votes_b: Sequence[Hashable],
    *,
    epsilon: float,
    delta: float,
    trials: int = 20_000,
    alpha: float = 1e-3,
    rng: RngLike = None,
) -> StableModeAudit:
    """Audit a mode-release mechanism (``mechanism(votes, rng)`` -> an answer or ``None``,
    e.g. the ``answer`` of :func:`pgm_dp.learners.zhang.structure.stable_mode`) on two neighbouring
    vote vectors, ``trials`` runs on each. The events ``{out = c}`` and ``{out != c}`` for
    every answer ``c`` among the votes and ``None`` are fixed before sampling; each of the two
    bounds uses ``alpha / 2``.

    >>> def always(votes, rng):
    ...     return votes[0]
    >>> audit_stable_mode(always, ["A"], ["B"], epsilon=1.0, delta=0.1, trials=100).consistent()
    False
    """
    if isinstance(trials, bool) or not isinstance(trials, int | np.integer) or trials < 1:
        raise PrivacyParameterError(f"trials must be an integer >= 1, got {trials!r}")
    gen = as_generator(rng)
    cats = list(dict.fromkeys([*votes_a, *votes_b, None]))
    counts = []
    for votes in (list(votes_a), list(votes_b)):
        out = Counter(mechanism(votes, gen) for _ in range(trials))
        eq = np.array([out[c] for c in cats])
        counts.append(np.concatenate([eq, trials - eq]))
    labels = [f"out = {c!r}" for c in cats] + [f"out != {c!r}" for c in cats]
    eps = epsilon_lower_bound(*counts, trials, trials, delta=delta, alpha=alpha / 2, labels=labels)
    d_lo = delta_lower_bound(*counts, trials, trials, epsilon=epsilon, alpha=alpha / 2)
    return StableModeAudit(eps.epsilon_lower, d_lo, epsilon, delta, eps.event, alpha, trials)


@dataclass(frozen=True)
class SupportAuditResult:
    """Bounds from the one event ``E`` of :func:`audit_lattice_support`, both directions:
    ``epsilon_lower`` (at the claimed ``delta``) and ``delta_lower`` (at the claimed
    ``epsilon``). All four Clopper-Pearson bounds hold together with probability
    ``>= 1 - alpha``, so if the claim holds both exceed it with probability ``<= alpha``."""

    epsilon_lower: float
    delta_lower: float
    hits_a: int
    hits_b: int
    n_a: int
    n_b: int
    epsilon: float
    delta: float
    alpha: float

    def consistent_with_claim(self) -> bool:
        """``True`` unless the samples refute the claimed ``(epsilon, delta)`` at ``alpha``."""
        return self.epsilon_lower <= self.epsilon and self.delta_lower <= self.delta


def audit_lattice_support(
    stat_a: np.ndarray,
    stat_b: np.ndarray,
    spacing: float,
    *,
    epsilon: float,
    delta: float,
    alpha: float = 1e-3,
    tol: float = 1e-10,
) -> SupportAuditResult:
    """Support attack on noise drawn on a lattice ``spacing · Z``.

    ``stat_a``/``stat_b``: an attacker's statistic of each release on the two neighbouring
    inputs, fixed in advance, that equals the noise when the guess is right (for objective
    perturbation, ``b(s) = -(n L_s(β̂) + Δ β̂)`` for the candidate ``s``; NaN for releases
    to skip). Event ``E = {|stat - spacing · rint(stat/spacing)| <= tol}``. Level ``α/4`` per
    bound; ``ε̂ = log((p_lo - δ)/p_hi)``, ``δ̂ = p_lo - e^ε p_hi``, maximised over directions.

    >>> res = audit_lattice_support(np.zeros(3000), np.full(3000, 0.5), 1.0, epsilon=5.0,
    ...                             delta=0.0)
    >>> res.epsilon_lower > 5, round(res.delta_lower, 2)
    (True, 0.59)
    """
    if not (math.isfinite(spacing) and spacing > 0 and tol >= 0):
        raise PrivacyParameterError("need spacing > 0 finite and tol >= 0")
    if not 0 < alpha < 1 or not 0 <= delta < 1 or not epsilon >= 0:
        raise PrivacyParameterError("need 0 < alpha < 1, 0 <= delta < 1 and epsilon >= 0")

    def hits(stat) -> tuple[int, int]:
        x = np.asarray(stat, dtype=np.float64).ravel()
        with np.errstate(invalid="ignore"):
            on = np.abs(x - spacing * np.rint(x / spacing)) <= tol
        return int(np.sum(on & np.isfinite(x))), x.size

    (ka, na), (kb, nb) = hits(stat_a), hits(stat_b)
    (lo_a,), (hi_a,) = clopper_pearson(np.array([ka]), na, alpha / 4)
    (lo_b,), (hi_b,) = clopper_pearson(np.array([kb]), nb, alpha / 4)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps_hat = max(np.log(max(lo_a - delta, 0.0) / hi_b), np.log(max(lo_b - delta, 0.0) / hi_a))
    scale = math.exp(epsilon)
    delta_hat = max(lo_a - scale * hi_b, lo_b - scale * hi_a, 0.0)
    eps_hat = 0.0 if math.isnan(eps_hat) else max(float(eps_hat), 0.0)
    return SupportAuditResult(
        eps_hat, float(delta_hat), ka, kb, na, nb, float(epsilon), float(delta), alpha
    )
