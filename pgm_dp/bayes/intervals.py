"""Intervals for the data's workload marginals, measured or not (the posterior and AIM's bounds).

Contract: :func:`workload_intervals` gives, for each marginal asked for, per-cell intervals
of the **data's** proportions ``M_r(D) / N`` (the table of the records released, not a
super-population's probabilities), at nominal ``level``:

* a marginal inside a measured clique: the equal-tailed posterior interval of the data's
  table (the ``table:`` site of :func:`~pgm_dp.bayes.posterior`, whose draws are unclipped,
  marginalised, then the interval clipped to ``[0, 1]``: a sum of clipped cells would be
  biased upwards, :mod:`~pgm_dp.bayes.linear`). The noise
  is known and the clique's table is observed through it, so this interval is calibrated
  whether or not the model's structure is right.
* any other marginal (*unsupported*): the posterior is conditional on the structure AIM
  selected; where the data have a dependence that structure lacks, the model's marginal
  (``marginal:`` of the posterior, or ``mu(theta)`` of any marginal) is biased, and its
  intervals cover the model's quantity, not the data's (about half the cells on Adult).
  The interval is instead centred at the model AIM's last selection scored, ``c = m_r(p̂_{T-1})``
  (released quantities only), with an **allowance** for the dependence it lacks, sized by
  that selection: ``r`` was a candidate of the last round and lost to the chosen marginal,
  so its misfit is taken to be of at most the scale ``s_r`` per square root of a cell that
  the chosen one's residual and AIM's noise allowance imply
  (:attr:`~pgm_dp.select.bounds.ErrorBound.residual`). Our rule: a cell ``x`` of ``r`` is
  off by ``s_r sqrt(c_x) Z_x``, ``Z_x`` standard normal, as a residual of a missing
  interaction would be, so the interval is ``c_x ± z s_r sqrt(c_x)``
  (``z`` the normal quantile of ``(1 + level) / 2``). This is an allowance, not a bound: its
  coverage is measured (``docs/bayes.md``), not guaranteed.
  It is intersected with two guaranteed sets: AIM's error bound ``B_r``
  (:func:`~pgm_dp.select.bounds.aim_error_bounds`, with the mechanism's slack: the tightest
  per-cell intervals that every table within ``B_r`` (L1) of ``c`` allows, whatever its
  sum, :func:`~pgm_dp.select.bounds.bound_intervals`) and the Fréchet bounds from the
  posterior intervals of the data's one-way tables:
  ``max(0, sum_v lo_v - (k-1)) <= d_x <= min_v hi_v``. Where the allowance lies outside
  them (the selection's estimate failed), or no allowance is known (``r`` was no candidate
  of the last round), the interval is their intersection alone (conservative: the L1 bound
  spent on each cell in turn). A posterior over every workload pair (the richer-model
  alternative) does not scale.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import scipy.stats

from ..domain import Clique
from ..errors import DomainError
from ..select.bounds import ErrorBound, bound_intervals, marginalise
from .labels import dim_name
from .model import table_name

__all__ = ["Interval", "workload_intervals"]


class Interval(NamedTuple):
    """Per-cell ``lower`` and ``upper`` of the data's proportions (axes in the marginal's
    order) and ``supported``: from the posterior of a measured clique's table (``True``) or
    from AIM's bound (``False``)."""

    lower: np.ndarray
    upper: np.ndarray
    supported: bool


def _table_draws(idata, clique: Clique, r: Clique) -> np.ndarray:
    """Draws ``(n, *shape of r)`` of the data's table of ``r`` from ``clique``'s site."""
    site = idata.posterior[table_name(clique)]
    site = site.transpose("chain", "draw", *[dim_name(v) for v in clique]).values
    return marginalise(site.reshape(-1, *site.shape[2:]), clique, r)


def _measured(cliques: Sequence[Clique], r: Clique) -> Clique | None:
    """The smallest of the posterior's model's ``cliques`` that contains ``r``."""
    inside = [tuple(c) for c in cliques if set(r) <= set(c)]
    return min(inside, key=len) if inside else None


def _quantiles(draws: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The equal-tailed interval of the draws, clipped to ``[0, 1]`` (the ``table:`` draws
    are unclipped, :mod:`~pgm_dp.bayes.linear`; quantiles commute with the clip)."""
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(draws, [tail, 1.0 - tail], axis=0)
    return np.clip(lo, 0.0, 1.0), np.clip(hi, 0.0, 1.0)


def _frechet(idata, cliques, r: Clique, level: float, shape) -> tuple[np.ndarray, np.ndarray]:
    """Fréchet bounds of ``r``'s cells from the one-way tables' posterior intervals."""
    lower, upper = np.zeros(shape), np.ones(shape)
    los = []
    for i, v in enumerate(r):
        c = _measured(cliques, (v,))
        if c is None:
            return lower, upper
        lo, hi = _quantiles(_table_draws(idata, c, (v,)), level)
        axes = [1] * len(r)
        axes[i] = -1
        upper = np.minimum(upper, hi.reshape(axes))
        los.append(lo.reshape(axes))
    lower = np.maximum(lower, sum(los) - (len(r) - 1))
    return lower, upper


def _allowance(bound: ErrorBound, level: float) -> tuple[np.ndarray, np.ndarray] | None:
    """``c ± z s sqrt(c)`` of the module docstring (axes in ``bound.clique``'s order), or
    ``None`` where the bound has no ``residual``."""
    if bound.residual is None:
        return None
    c = np.clip(np.asarray(bound.center, dtype=np.float64), 0.0, None)
    half = scipy.stats.norm.ppf(0.5 + level / 2.0) * bound.residual * np.sqrt(c)
    return np.clip(c - half, 0.0, 1.0), np.clip(c + half, 0.0, 1.0)


def _unsupported(idata, cliques, r: Clique, bound: ErrorBound, level: float) -> Interval:
    """An unmeasured marginal's interval (module docstring), axes in ``r``'s order."""
    order = [bound.clique.index(v) for v in r]
    lo_b, hi_b = (np.transpose(a, order) for a in bound_intervals(bound))
    lo_f, hi_f = _frechet(idata, cliques, r, level, lo_b.shape)
    lo, hi = np.maximum(lo_b, lo_f), np.minimum(hi_b, hi_f)
    empty = lo > hi  # the two disagree (one of them failed): AIM's bound alone there
    lo, hi = np.where(empty, lo_b, lo), np.where(empty, hi_b, hi)
    allowance = _allowance(bound, level)
    if allowance is not None:  # clipped to the guaranteed sets; where disjoint, those alone
        lo_a, hi_a = (np.transpose(a, order) for a in allowance)
        meet = (lo_a <= hi) & (hi_a >= lo)
        lo, hi = np.where(meet, np.maximum(lo_a, lo), lo), np.where(meet, np.minimum(hi_a, hi), hi)
    return Interval(lo, hi, False)


def workload_intervals(
    idata,
    cliques: Sequence[Clique],
    marginals: Sequence[Clique],
    bounds: dict | None = None,
    *,
    level: float = 0.9,
) -> dict[Clique, Interval]:
    """Per-cell intervals of the data's proportions of each of ``marginals`` (module
    docstring).

    Args:
        idata: a posterior of :func:`~pgm_dp.bayes.posterior` (its ``table:`` sites).
        cliques: the cliques of the model it was fitted to (``mrf.cliques``).
        marginals: the marginals (tuples of variables; axes of the result in that order).
        bounds: ``{r: ErrorBound}`` from :func:`~pgm_dp.select.bounds.aim_error_bounds` at
            ``level`` (keys in any variable order); needed for every marginal inside no
            measured clique.
        level: nominal coverage, ``0 < level < 1``.
    """
    if not 0.0 < level < 1.0:
        raise DomainError(f"level must lie in (0, 1), got {level!r}")
    by_set = {frozenset(k): b for k, b in (bounds or {}).items()}
    out = {}
    for r in marginals:
        r = tuple(r)
        c = _measured(cliques, r)
        if c is not None:
            out[r] = Interval(*_quantiles(_table_draws(idata, c, r), level), True)
            continue
        bound: ErrorBound | None = by_set.get(frozenset(r))
        if bound is None:
            raise DomainError(f"{r} lies in no measured clique: its AIM bound is needed")
        out[r] = _unsupported(idata, cliques, r, bound, level)
    return out
