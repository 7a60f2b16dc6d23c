"""AIM's per-query error bounds (McKenna, Mullins, Sheldon & Miklau 2022, Sec. 5).

Contract: :func:`aim_error_bounds` turns an :class:`~.aim.AIMResult` (the release and the
selection record: nothing else of the data) into, per workload marginal ``r``, an
:class:`ErrorBound`: an upper bound ``B_r`` on the L1 error ``||M_r(D) - N̂ m_r||_1`` (counts)
of a model's marginal ``m_r`` that holds with probability at least ``level`` over the
mechanism's randomness, and :func:`bound_intervals` turns it into per-cell intervals of the
data's proportions ``M_r(D) / N``. Everything is post-processing of released quantities.

* **Supported** ``r`` (inside a measured clique ``c``; Sec. 5, the measured case): the noisy
  table ``ỹ_c`` marginalised to ``r`` is the data's marginal plus noise, and marginalising
  does not increase an L1 norm, so ``||M_r(D) - N̂ m_r||_1 <= ||ỹ_r - N̂ m_r||_1 + Q_c``,
  ``Q_c`` the ``level`` quantile of ``||z_c||_1`` of the clique's noise (:func:`l1_noise_bound`).
* **Unsupported** ``r`` (Sec. 5, from the exponential mechanism's selection): ``r`` was a
  candidate of the last round ``T`` and not chosen. The exponential mechanism's utility
  guarantee (McSherry & Talwar 2007; Dwork & Roth 2014, Thm. 3.11) gives, with probability
  at least ``1 - δ_2``, ``q_r <= q_{r_T} + (2Δ/ε_T)(ln |C_T| + ln(1/δ_2))`` for the scores
  ``q_r = w_r (||M_r(D) - N̂ m_r(p̂_{T-1})||_1 - b n_r)`` (``Δ = max w``, ``b`` the expected
  absolute noise per cell); ``q_{r_T}`` is bounded by the released ``ỹ_T`` through
  ``||M_{r_T}(D) - ỹ_T||_1 <= Q_T`` (probability ``1 - δ_1``). Solving for ``r``:
  ``B_r = b n_r + (w_{r_T}(||ỹ_T - N̂ m_{r_T}(p̂_{T-1})||_1 + Q_T - b n_{r_T}) + (2Δ/ε_T)
  (ln |C_T| + ln(1/δ_2))) / w_r``, about the model ``p̂_{T-1}`` the last selection scored
  (kept in :attr:`~.aim.AIMResult.last_scored`). Our choices: the last round (the model
  closest to the final one), ``δ_1 = δ_2 = (1 - level) / 2``; a marginal that was no
  candidate of the last round gets the trivial bound ``2 N̂``.

``Q`` is exact for Laplace noise (``||z||_1`` of ``n`` cells is ``Gamma(n, b)``) and the
Gaussian concentration bound ``sqrt(2/π) σ n + λ σ sqrt(n)``, ``λ = sqrt(2 ln(1/δ))``, for
Gaussian noise (the L1 norm is ``σ sqrt(n)``-Lipschitz); the discrete kinds are taken as
their continuous counterparts of the same scale (our choice; a difference of the order of
one count per cell). ``N̂`` is the release's total; proportions divide by it.

An unsupported bound of the last round also carries ``residual``, the scale ``s_r`` of
``r``'s misfit per square root of a cell that the selection implies. The score subtracts
each candidate's expected noise ``b n_r``, and ``r`` lost to ``r_T``, so ``r``'s misfit
beyond ``b n_r`` is taken to be at most ``r_T``'s beyond ``b n_{r_T}``, compared per square
root of a cell (our choice, in place of the weights ``w``: a residual of a missing
interaction grows as ``sqrt(m_x)`` in a cell of probability ``m_x``):
``s_r = ((||ỹ_T - N̂ m_T||_1 - b n_{r_T})_+ / sum_x sqrt(m_{T,x}) + b n_r / sum_x sqrt(c_x))
/ (N̂_{T-1} sqrt(2/π))`` (``m_T = m_{r_T}(p̂_{T-1})``, ``c = m_r(p̂_{T-1})``), the ``s`` for
which ``s sqrt(c_x) Z_x`` (``Z_x`` standard normal) has that expected L1 norm. Not a bound
that holds with a stated probability (the exponential mechanism's slack and the noise's
spread are left out): the allowance :func:`~pgm_dp.bayes.intervals.workload_intervals`
gives an unmeasured marginal's cells, its coverage measured.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.stats

from ..domain import Clique
from ..errors import DomainError
from ..privacy.noise import NoiseModel
from .aim import AIMResult, model_marginals
from .workload import candidate_weights, workload_cliques

__all__ = ["ErrorBound", "aim_error_bounds", "bound_intervals", "l1_noise_bound", "marginalise"]


@dataclass(frozen=True)
class ErrorBound:
    """AIM's bound of one marginal ``r``: ``l1`` (counts) on ``||M_r(D) - total * center||_1``
    with probability at least ``level``; ``center``: the model's marginal (proportions, axes
    in ``r``'s order) the bound is about; ``supported``: ``r`` lies in a measured clique;
    ``residual``: for an unsupported ``r`` of the last round, the scale of its misfit per
    square root of a cell that the selection implies (proportions; module docstring), else
    ``None``."""

    clique: Clique
    l1: float
    total: float
    center: np.ndarray
    supported: bool
    level: float
    residual: float | None = None


def l1_noise_bound(noise: NoiseModel, cells: int, failure: float) -> float:
    """An upper bound on ``||z||_1`` of ``cells`` independent draws of ``noise`` that fails
    with probability at most ``failure`` (module docstring).

    Args:
        noise: the noise model of one measured table (Laplace or Gaussian kind).
        cells: the number of noisy cells.
        failure: ``0 < failure < 1``.
    """
    if noise.scale == 0:
        return 0.0
    if noise.is_laplace:
        return float(scipy.stats.gamma.ppf(1.0 - failure, cells, scale=noise.scale))
    sigma, lam = noise.scale, math.sqrt(2.0 * math.log(1.0 / failure))
    return math.sqrt(2.0 / math.pi) * sigma * cells + lam * sigma * math.sqrt(cells)


def marginalise(table: np.ndarray, clique: Clique, r: Clique) -> np.ndarray:
    """``table``, whose last axes are ``clique``'s (in its order; any leading axes, e.g.
    draws, are kept), summed to ``r`` (axes in ``r``'s order)."""
    lead = table.ndim - len(clique)
    drop = tuple(lead + i for i, v in enumerate(clique) if v not in r)
    kept = [v for v in clique if v in r]
    return np.transpose(table.sum(axis=drop), [*range(lead), *(lead + kept.index(v) for v in r)])


def _supported(result: AIMResult, r: Clique, model, level: float) -> ErrorBound | None:
    """The measured case (module docstring), from the clique with the smallest noise."""
    rel = result.release.merged()  # a repeated clique as its inverse-variance merge
    best = None
    for c, table, noise in zip(rel.cliques, rel.tables(), rel.noise_models(), strict=True):
        if set(r) <= set(c):
            q = l1_noise_bound(noise, int(table.size), 1.0 - level)
            if best is None or q < best[0]:
                best = (q, c, table)
    if best is None:
        return None
    q, c, table = best
    center = model_marginals(model, [r])[0]
    noisy = marginalise(np.asarray(table, dtype=float), c, r)
    l1 = float(np.abs(noisy - rel.total * center).sum()) + q
    return ErrorBound(r, l1, rel.total, center, True, level)


def _unsupported(result: AIMResult, r: Clique, level: float) -> ErrorBound:
    """The selection case (module docstring), from the last round."""
    scored, last = result.last_scored, result.rounds[-1]
    total = result.release.total
    size = int(math.prod(result.release.domain.sizes(r)))
    if scored is None or r not in scored.candidates or last.selection_epsilon is None:
        center = np.full(result.release.domain.sizes(r), 1.0 / size)
        return ErrorBound(r, 2.0 * total, total, center, False, level)
    chosen = last.cliques[0]
    fail = (1.0 - level) / 2.0
    y_t = np.asarray(result.measurements.tables()[-1], dtype=float)
    noise_t = result.measurements.noise_models()[-1]
    m_t, center = model_marginals(scored.model, [chosen, r])
    w = scored.candidates
    sens = scored.records_per_person * max(w.values())  # the selection's (aim.select_marginal)
    q_t = w[chosen] * (
        np.abs(y_t - scored.total * m_t).sum()
        + l1_noise_bound(noise_t, y_t.size, fail)
        - scored.noise_bias * y_t.size
    )
    # the mechanism samples on utilities rounded to a lattice of step g <= sens 2^-20, with
    # sensitivity g (ceil(sens / g) + 1) (pgm_dp.privacy.argmax): both covered by 2^-18
    sens *= 1.0 + 2.0**-18
    em = 2.0 * sens / last.selection_epsilon * (math.log(len(w)) + math.log(1.0 / fail))
    l1 = scored.noise_bias * size + (q_t + em) / w[r]
    # the bound is about N̂_{T-1} m_r; its change to the release's N̂ is added (exact)
    l1 += abs(total - scored.total)
    beyond = np.abs(y_t - scored.total * m_t).sum() - scored.noise_bias * y_t.size
    root_t, root_r = (float(np.sqrt(np.clip(m, 0.0, None)).sum()) for m in (m_t, center))
    residual = max(beyond, 0.0) / root_t + scored.noise_bias * size / root_r
    residual /= scored.total * math.sqrt(2.0 / math.pi)
    return ErrorBound(r, float(max(l1, 0.0)), total, center, False, level, float(residual))


def aim_error_bounds(
    result: AIMResult,
    model,
    workload=None,
    *,
    level: float = 0.9,
    cliques: Sequence[Clique] | None = None,
) -> dict[Clique, ErrorBound]:
    """AIM's error bound (module docstring) of every marginal of ``workload`` (AIM's
    default: all 2-way marginals) or of ``cliques``.

    Args:
        result: AIM's result (release and selection record; ``fit_table``'s ``selection``).
        model: the final model whose supported marginals are bounded (anything with
            ``marginal``, or a MarkovRandomField); unsupported ones are about ``p̂_{T-1}``.
        workload: as :func:`~pgm_dp.select.aim`'s; must be the workload AIM ran with (its
            weights enter the bound).
        level: probability ``0 < level < 1`` with which each bound holds.
        cliques: the marginals to bound (default the workload's).
    """
    if not 0.0 < level < 1.0:
        raise DomainError(f"level must lie in (0, 1), got {level!r}")
    dom = result.release.domain
    weights = candidate_weights(workload_cliques(dom, workload))
    if result.last_scored is not None:
        weights = {**weights, **result.last_scored.candidates}
    targets = [tuple(c) for c in (cliques or [c for c, _ in workload_cliques(dom, workload)])]
    out = {}
    for r in targets:
        bound = _supported(result, r, model, level)
        out[r] = bound if bound is not None else _unsupported(result, _key(r, weights), level)
    return out


def _key(r: Clique, weights) -> Clique:
    """``r`` as the candidates spell it (a clique's variables in any order)."""
    for c in weights:
        if set(c) == set(r) and len(c) == len(r):
            return c
    return r


def bound_intervals(bound: ErrorBound) -> tuple[np.ndarray, np.ndarray]:
    """Per cell ``(lower, upper)`` of the data's proportions ``p = M_r(D) / N`` implied by
    ``bound``, the tightest that hold for every table ``a = M_r(D) >= 0`` with
    ``||a - N̂ c||_1 <= l1`` (``c`` the ``center``), whatever its sum ``N`` (the data's
    table sums to ``N``, not to ``N̂``). With ``ℓ = l1 / N̂``, write ``a = N̂ c + d``: cell
    ``j`` is largest when ``d_j = x >= 0`` and the other cells lose ``y >= 0`` in all,
    ``x + y = ℓ N̂``, so ``p_j = (c_j + x') / (1 + 2x' - ℓ)`` (``x' = x / N̂``), monotone in
    ``x'``: its largest value is at an end, ``max((c_j + ℓ) / (1 + ℓ), c_j / (1 - ℓ))``, or 1
    when ``ℓ >= 1 - c_j`` (the other cells can all be emptied). Likewise the smallest is
    ``min(c_j / (1 + ℓ), (c_j - ℓ) / (1 - ℓ))``, or 0 when ``ℓ >= c_j``. Both ends are
    attained by such a table.

    Args:
        bound: an :class:`ErrorBound` (``total`` ``N̂ > 0``).
    """
    c = np.asarray(bound.center, dtype=np.float64)
    ell = bound.l1 / bound.total
    with np.errstate(divide="ignore", invalid="ignore"):
        up = np.maximum((c + ell) / (1.0 + ell), c / (1.0 - ell))
        low = np.minimum(c / (1.0 + ell), (c - ell) / (1.0 - ell))
    upper = np.where(ell < 1.0 - c, up, 1.0)
    lower = np.where(ell < c, low, 0.0)
    return np.clip(lower, 0.0, 1.0), np.clip(upper, 0.0, 1.0)
