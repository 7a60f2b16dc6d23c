"""Numeric columns as discrete variables: public bins and private quantile bins.

A numeric column becomes a discrete variable by cutting its public range ``[lo, hi]`` at edges
``lo = e_0 < e_1 < ... < e_k = hi``; bin ``i`` is ``[e_i, e_{i+1})`` and the last bin is
closed, ``[e_{k-1}, e_k]``. Values below ``lo`` (above ``hi``) are counted in the first (last)
bin when ``clip`` is true, the usual clamping of differentially private statistics; otherwise
they are refused. Binned values decode to the interval labels ``"[20, 30)"`` (or to the bins'
midpoints, :func:`bin_midpoints`).

The edges come from the user (public bins or public bounds cut into equal widths, no privacy
cost) or from :func:`private_quantiles`: the exponential mechanism for one quantile of Smith
(2011, "Privacy-preserving statistical estimation with optimal convergence rates", STOC),
run independently for each quantile (the "IndExp" baseline of Gillenwater, Joseph & Kulesza
2021, "Differentially private quantiles", ICML). Its output space is a public grid of
``G - 1`` interior points ``c_j = lo + j (hi - lo) / G`` of the public bounds (Smith's mechanism
samples an interval between order statistics with weight proportional to its length; on an
equally spaced grid the counting measure is that weighting, discretised). The utility of a
candidate ``c`` for the quantile ``q`` of the ``n`` clamped values is

``u(c) = -| #{i : x_i < c} - q n |``,

whose sensitivity is 1 under add/remove-one and replace-one neighbours (the count moves by at
most 1, ``q n`` by ``q <= 1``). ``c`` is drawn with probability ``∝ exp(ε u(c) / 2)`` by
:func:`pgm_dp.privacy.exponential_mechanism` (exact, on lattice-rounded utilities, which
multiplies the sensitivity by ``1 + 2^-20``), which charges the accountant ``ε`` per quantile.
When one person owns up to ``K`` of the values (``max_records_per_person``,
:mod:`pgm_dp.prepare.persons`), the count moves by at most ``K`` and ``q n`` by ``q K``: the
sensitivity is ``K`` and ``c`` is drawn ``∝ exp(ε u(c) / (2K))``.
``m`` quantiles of one column cost ``m ε`` (basic composition) or, under a zCDP budget
``ρ``, ``ε = sqrt(2ρ/m)`` each (``ε``-DP is ``ε²/2``-zCDP, Bun & Steinke 2016 Prop. 1.4).

Example
-------
>>> import numpy as np
>>> from pgm_dp.privacy import Accountant, PureDP
>>> x = np.arange(1000.0) % 100
>>> acc = Accountant(PureDP(1.0))
>>> q = private_quantiles(x, [0.5], (0, 100), budget=PureDP(1.0), grid=100, rng=0,
...                       accountant=acc)
>>> bool(40 <= q[0] <= 60), acc.spent
(True, PureDP(epsilon=1.0))
>>> bin_labels((0, 18, 30, 120))
('[0, 18)', '[18, 30)', '[30, 120]')
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ..errors import DataValidationError, DomainError
from ..privacy import ZCDP, Accountant, PureDP, exponential_mechanism
from ..privacy.budget import Budget, require_budget
from ..privacy.release import check_records_per_person
from ..rng import RngLike, as_generator

__all__ = [
    "MAX_GRID",
    "whole_within",
    "check_bounds",
    "check_edges",
    "uniform_edges",
    "quantile_utility",
    "per_quantile_budget",
    "private_quantiles",
    "quantile_edges",
    "bin_labels",
    "bin_midpoints",
    "bin_codes",
]

#: Largest public grid of candidate quantiles (the utility vector is allocated at this size).
MAX_GRID = 10**6


def _finite(x: Any, what: str) -> float:
    if isinstance(x, bool) or not isinstance(x, int | float | np.integer | np.floating):
        raise DomainError(f"{what} must be a number, got {x!r}")
    try:
        v = float(x)
    except OverflowError:  # an int beyond float64
        v = math.inf
    if not math.isfinite(v):
        raise DomainError(f"{what} must be finite, got {x!r}")
    return v


def check_bounds(bounds: Any, name: Hashable) -> tuple[float, float]:
    """``(lo, hi)`` with ``lo < hi`` finite, or :class:`~pgm_dp.errors.DomainError`."""
    if isinstance(bounds, str) or not isinstance(bounds, Sequence) or len(bounds) != 2:
        raise DomainError(f"bounds of {name!r} must be a pair [lo, hi], got {bounds!r}")
    lo, hi = (_finite(b, f"bounds of {name!r}") for b in bounds)
    if not lo < hi:
        raise DomainError(f"bounds of {name!r} must satisfy lo < hi, got {bounds!r}")
    if not math.isfinite(hi - lo):  # the bins' widths and the quantile grid need hi - lo
        raise DomainError(
            f"bounds of {name!r} are too far apart: hi - lo overflows a float, got {bounds!r}"
        )
    return lo, hi


def check_edges(edges: Any, name: Hashable, max_bins: int) -> tuple[float, ...]:
    """Strictly increasing finite bin edges (at least 2, at most ``max_bins + 1``)."""
    if isinstance(edges, str) or not isinstance(edges, Sequence):
        raise DomainError(f"bins of {name!r} must be a list of edges, got {edges!r}")
    if not 2 <= len(edges) <= max_bins + 1:
        raise DomainError(
            f"bins of {name!r} must have between 2 and {max_bins + 1} edges, got {len(edges)}"
        )
    out = tuple(_finite(e, f"bin edges of {name!r}") for e in edges)
    if any(b <= a for a, b in zip(out, out[1:], strict=False)):
        raise DomainError(f"bin edges of {name!r} must be strictly increasing, got {list(out)}")
    return out


def _check_count(k: Any, what: str, upper: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 1 <= k <= upper:
        raise DomainError(f"{what} must be an integer in [1, {upper}], got {k!r}")
    return int(k)


def uniform_edges(lo: float, hi: float, n_bins: int) -> tuple[float, ...]:
    """``n_bins`` equal-width bins of ``[lo, hi]`` (public: no privacy cost).

    >>> uniform_edges(0, 100, 4)
    (0.0, 25.0, 50.0, 75.0, 100.0)
    """
    return tuple(float(e) for e in np.linspace(lo, hi, int(n_bins) + 1))


def quantile_utility(sorted_values: np.ndarray, candidates: np.ndarray, q: float) -> np.ndarray:
    """Smith's utility ``-| #{x_i < c} - q n |`` of each candidate ``c`` (sensitivity 1).

    >>> quantile_utility(np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.5, 2.5, 3.5]), 0.5)
    array([-2.,  0., -1.])
    """
    below = np.searchsorted(sorted_values, candidates, side="left")
    return 0.0 - np.abs(below - q * sorted_values.size)


def per_quantile_budget(budget: Budget, m: int) -> PureDP:
    """The pure budget of each of ``m`` quantiles that together spend ``budget``: ``ε/m`` of a
    ``PureDP(ε)`` (basic composition), ``sqrt(2ρ/m)`` of a ``ZCDP(ρ)`` (Prop. 1.4 of Bun &
    Steinke 2016, then zCDP composition).

    >>> per_quantile_budget(ZCDP(0.5), 4).epsilon
    0.5
    """
    require_budget(
        budget,
        PureDP | ZCDP,
        f"private quantiles need a PureDP or ZCDP budget, got {budget!r} (convert an "
        "(epsilon, delta) budget with pgm_dp.privacy.zcdp_rho_within)",
    )
    return budget.pure_steps(m)


def _clean_values(values: Any, lo: float, hi: float) -> np.ndarray:
    try:
        x = np.array(values, dtype=np.float64, copy=True).ravel()
    except (TypeError, ValueError):
        raise DataValidationError("values of a private quantile must be numbers") from None
    if np.isnan(x).any():
        raise DataValidationError("values of a private quantile contain NaN (drop them first)")
    return np.sort(np.clip(x, lo, hi))


def private_quantiles(
    values: Any,
    quantiles: Sequence[float],
    bounds: Sequence[float],
    *,
    budget: PureDP,
    grid: int = 1000,
    rng: RngLike = None,
    accountant: Accountant | None = None,
    what: str = "quantile",
    max_records_per_person: int = 1,
) -> np.ndarray:
    """Each quantile ``q`` of ``values`` (clamped to ``bounds``) by Smith's exponential mechanism
    on the public grid ``lo + j (hi - lo) / grid``, ``j = 1..grid-1`` (module docstring).

    ``budget`` is the ``PureDP`` cost of **each** quantile (see :func:`per_quantile_budget`);
    the accountant is charged once per quantile. Everything is checked, and the accountant's
    room for all the charges too, before the first charge. Returns the chosen points in the
    order of ``quantiles`` (not sorted; they are independent draws). With
    ``max_records_per_person=K`` the utility's sensitivity is ``K`` (module docstring).
    """
    lo, hi = check_bounds(bounds, what)
    g = _check_count(grid, "grid", MAX_GRID)
    if g < 2:
        raise DomainError("grid must be at least 2 (one interior candidate)")
    qs = [_finite(q, "a quantile") for q in quantiles]
    if not qs or any(not 0 < q < 1 for q in qs):
        raise DomainError(f"quantiles must be a non-empty list in (0, 1), got {list(quantiles)}")
    require_budget(budget, PureDP, f"each quantile needs a PureDP budget, got {budget!r}")
    sens = float(check_records_per_person(max_records_per_person))
    x = _clean_values(values, lo, hi)
    candidates = lo + (hi - lo) * np.arange(1, g) / g
    if accountant is not None:
        accountant.check(_total_cost(accountant, budget, len(qs)), what=what)
    gen = as_generator(rng)
    out = np.empty(len(qs))
    for i, q in enumerate(qs):
        u = quantile_utility(x, candidates, q)
        j = exponential_mechanism(
            u, sensitivity=sens, budget=budget, rng=gen, accountant=accountant, what=f"{what} {q:g}"
        )
        out[i] = candidates[j]
    return out


def _total_cost(accountant: Accountant, each: PureDP, m: int) -> Budget:
    """``m`` charges of ``each`` as one cost in the accountant's notion (for a pre-check)."""
    return accountant.total.cost_of_pure(each, m)


def quantile_edges(
    values: np.ndarray,
    n_bins: int,
    bounds: tuple[float, float],
    *,
    budget: Budget,
    grid: int,
    rng: np.random.Generator,
    accountant: Accountant | None,
    what: str,
    max_records_per_person: int = 1,
) -> tuple[float, ...]:
    """Edges of ``n_bins`` roughly equal-count bins: ``lo``, the private quantiles
    ``1/n_bins, ..., (n_bins-1)/n_bins`` (sorted, repeats removed) and ``hi``. The column's
    whole ``budget`` (PureDP or ZCDP) is split evenly over the ``n_bins - 1`` quantiles;
    ``max_records_per_person``: as :func:`private_quantiles`'."""
    lo, hi = bounds
    if n_bins == 1:
        return (lo, hi)
    each = per_quantile_budget(budget, n_bins - 1)
    qs = [i / n_bins for i in range(1, n_bins)]
    pts = private_quantiles(
        values,
        qs,
        bounds,
        budget=each,
        grid=grid,
        rng=rng,
        accountant=accountant,
        what=what,
        max_records_per_person=max_records_per_person,
    )
    inner = sorted({float(p) for p in pts if lo < p < hi})
    return (lo, *inner, hi)


def _fmt(x: float, digits: int) -> str:
    if digits == 0:
        return repr(float(x))
    if float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.{digits}g}"


def bin_labels(edges: Sequence[float]) -> tuple[str, ...]:
    """Interval labels ``"[a, b)"`` (the last one closed, ``"[a, b]"``), with as many digits as
    needed to keep them distinct."""
    k = len(edges) - 1
    for digits in (6, 10, 15, 0):
        labs = tuple(
            f"[{_fmt(edges[i], digits)}, {_fmt(edges[i + 1], digits)}{']' if i == k - 1 else ')'}"
            for i in range(k)
        )
        if len(set(labs)) == k:
            return labs
    raise DomainError(f"bin edges {list(edges)} give repeated labels")  # pragma: no cover


def bin_midpoints(edges: Sequence[float]) -> np.ndarray:
    """The midpoint of each bin (a representative value for decoding).

    >>> bin_midpoints((0, 10, 30)).tolist()
    [5.0, 20.0]
    """
    e = np.asarray(edges, dtype=np.float64)
    return (e[:-1] + e[1:]) / 2


def bin_codes(x: np.ndarray, edges: Sequence[float], clip: bool, name: Hashable) -> np.ndarray:
    """Bin index of each (non-missing) value; out-of-range values are clamped when ``clip``,
    else :class:`~pgm_dp.errors.DataValidationError`, which names the column and its public
    range only: never a value, a record or how many (a count of the data, not covered by any
    mechanism)."""
    lo, hi = edges[0], edges[-1]
    outside = (x < lo) | (x > hi)
    if not clip and outside.any():
        raise DataValidationError(
            f"column {name!r}: some records lie outside its bins [{edges[0]:g}, {edges[-1]:g}] "
            "(neither values nor how many shown); widen the bins, or allow clip "
            '("clip": true, the default) to count them in the end bins'
        )
    inner = np.asarray(edges[1:-1], dtype=np.float64)
    return np.searchsorted(inner, x, side="right").astype(np.int64)


def whole_within(edges: np.ndarray, b: np.ndarray, within: np.ndarray) -> np.ndarray:
    """Whole numbers drawn uniformly among those of bin ``b`` (``[e_b, e_{b+1})``, the last
    bin closed) with the uniforms ``within``; a bin holding none (narrower than one) gives
    the whole number nearest its midpoint within the declared range ``[e_0, e_k]`` (the
    range rounded inwards when it holds a whole number). Float64, whole-valued."""
    last = len(edges) - 2
    lo = np.ceil(edges[b])
    hi = np.where(b == last, np.floor(edges[b + 1]), np.ceil(edges[b + 1]) - 1)
    count = hi - lo + 1
    drawn = lo + np.minimum(np.floor(within * np.maximum(count, 1)), np.maximum(count - 1, 0))
    low, high = np.ceil(edges[0]), np.floor(edges[-1])
    nearest = np.round((edges[b] + edges[b + 1]) / 2)
    if low <= high:
        nearest = np.clip(nearest, low, high)
    return np.where(count >= 1, drawn, nearest)
