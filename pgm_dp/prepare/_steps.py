"""The private steps of :func:`pgm_dp.prepare.prepare_plan`: the budget split between private
quantiles and the one-way release, every charge checked on a copy of the accountant before
the first, the bins drawn at private quantiles, the one-way release, the missing state folded
away and rare states merged (McKenna et al. 2021, MST's ``compress_domain``). Both private
steps take their sensitivity times ``K``, the options' ``max_records_per_person``
(:mod:`pgm_dp.prepare.persons`)."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, replace

import numpy as np

from ..domain import Domain, check_table_cells
from ..errors import BudgetExceededError, DomainError, PrivacyParameterError
from ..privacy import ZCDP, Accountant, Charge, NoisyMarginals, PureDP, release_marginals
from ..privacy.budget import Budget, require_budget
from ..privacy.mechanisms import perturb
from ..privacy.release import MECHANISMS
from .binning import per_quantile_budget, quantile_edges
from .columns import ColumnPlan

__all__ = [
    "private_steps",
    "precheck",
    "Spent",
    "spend",
    "spent",
    "noise_tail_point",
    "MISSING_KEEP_RATE",
]


def _scale(budget: Budget, f: float) -> Budget:
    return budget.split(f)


def private_steps(drafts, budget, compress, mechanism, share) -> tuple:
    """``(budget per quantile column, budget of the one-way release or None, mechanism)``;
    every budget option checked before anything is spent."""
    quant = [d for d in drafts if d.values is not None]
    if compress is None:
        compress = budget is not None
    if compress not in (True, False):
        raise DomainError(f"compress must be None, True or False, got {compress!r}")
    if not quant and not compress:
        return None, None, None
    if budget is None:
        need = [f"private quantiles of {[d.plan.name for d in quant]}"] if quant else []
        raise PrivacyParameterError(
            "a budget is needed for "
            + " and ".join(need + ["compression"] * compress)
            + " (or declare bins, and pass compress=False)"
        )
    require_budget(
        budget,
        PureDP | ZCDP,
        f"budget must be PureDP or ZCDP, got {budget!r} (convert an (epsilon, delta) "
        "budget with pgm_dp.privacy.zcdp_rho_within)",
    )
    b_q = _scale(budget, share) if quant and compress else (budget if quant else None)
    b_m = None
    if compress:
        b_m = _scale(budget, 1 - share) if quant else budget
        mechanism = mechanism or budget.default_mechanism
        if mechanism not in MECHANISMS:
            raise PrivacyParameterError(f"mechanism must be one of {MECHANISMS}, got {mechanism!r}")
        perturb([], kind=mechanism, sensitivity=1.0, budget=b_m)  # the notion fits the kind
    return (_scale(b_q, 1 / len(quant)) if quant else None), b_m, mechanism


def precheck(acc: Accountant, budget: Budget, drafts, b_col, b_m) -> None:
    """Check the one-way tables' size and charge every planned cost to a copy of ``acc``:
    ModelTooLargeError or BudgetExceededError before anything is spent."""
    if b_m is not None:  # the one-way tables' size, bounded before anything is spent
        names = [d.plan.name for d in drafts]
        sizes = [
            d.n_bins + d.plan.missing if d.values is not None else len(d.plan.states)
            for d in drafts
        ]
        check_table_cells(Domain(names, sizes), [(n,) for n in names])
    sim = copy.deepcopy(acc)
    try:
        for d in drafts:
            if d.values is not None:
                each = per_quantile_budget(b_col, d.n_bins - 1)
                for _ in range(d.n_bins - 1):
                    sim.charge(each, what="quantile", mechanism="check")
        if b_m is not None:
            sim.charge(b_m, what="one-way marginals", mechanism="check")
    except BudgetExceededError:
        raise BudgetExceededError(
            f"privacy budget exceeded: the preparation needs {budget}, the accountant has "
            f"{acc.remaining} left of {acc.total}; nothing was charged or released"
        ) from None


def _one_way(codes: np.ndarray, plans, b_m, mechanism, gen, acc, k: int) -> NoisyMarginals:
    names = [p.name for p in plans]
    full = Domain(names, [len(p.states) for p in plans], [p.states for p in plans])
    cliques = [(n,) for n in names]
    rel = release_marginals(
        codes,
        cliques,
        Domain(names, full.shape),
        budget=b_m,
        mechanism=mechanism,
        rng=gen,
        accountant=acc,
        what="prepare: one-way marginals",
        max_records_per_person=k,
    )
    return replace(rel, domain=full)


#: Largest chance that a column without missing values keeps its ``"<missing>"`` state (its
#: noisy count, pure noise, reaches the fold's threshold): ``1/1200`` per column, so that
#: fewer than 1 % of complete 12-column tables keep one anywhere (``1 - (1 - 1/1200)^12``).
MISSING_KEEP_RATE = 1 / 1200


def noise_tail_point(noise, rate: float) -> float:
    """The smallest count ``t`` with ``P(noise >= t) <= rate`` for one cell of ``noise`` (a
    :class:`~pgm_dp.privacy.noise.NoiseModel`): a function of the public noise scale only.
    Laplace ``b``: ``P(X >= t) = e^(-t/b)/2``. Discrete Laplace (``P(k) ∝ a^|k|``, ``a =
    e^(-1/b)``): ``P(X >= k) = a^k/(1 + a)``, the smallest such integer. Gaussian ``σ``:
    ``σ Φ⁻¹(1 - rate)``. Discrete Gaussian (``P(k) ∝ e^(-k²/2σ²)``): the smallest integer
    ``k`` with ``φ(k/σ)/σ + Q(k/σ) <= rate``, an upper bound of its tail (its normaliser is
    at least ``σ sqrt(2π)``, Poisson summation; the sum beyond ``k`` at most its first
    term plus the integral)."""
    from scipy.special import ndtr, ndtri

    b = noise.scale
    if b == 0:
        return 0.0
    if noise.kind == "laplace":
        return b * math.log(1 / (2 * rate))
    if noise.kind == "discrete_laplace":
        a = math.exp(-1 / b)
        return float(max(1, math.ceil(math.log(rate * (1 + a)) / math.log(a))))
    z = float(ndtri(1 - rate))
    if noise.kind == "gaussian":
        return b * z
    k = max(1, math.floor(b * z))
    while math.exp(-0.5 * (k / b) ** 2) / (b * math.sqrt(2 * math.pi)) + ndtr(-k / b) > rate:
        k += 1
    return float(k)


def _fold_missing(plans, one_way: NoisyMarginals, threshold: float, notes: list) -> tuple:
    """A missing state whose noisy count is below ``threshold`` noise standard deviations, or
    below the count that pure noise reaches with chance :data:`MISSING_KEEP_RATE`
    (:func:`noise_tail_point`), whichever is higher, is folded away, as rare states are
    merged (post-processing of the one-way release with a threshold of the public noise
    scale, never a look at the data): the state leaves the column, its missing values (few,
    if any) are encoded as the state with the largest noisy count, and its noisy count is
    dropped from the one-way table. A column without missing values thus keeps the state
    with chance at most :data:`MISSING_KEEP_RATE` (3 standard deviations of Laplace noise
    alone would keep it with chance ``e^(-3 sqrt 2)/2``, about 0.7 %)."""
    out, noisy = [], dict(one_way.noisy)
    for p in plans:
        y = np.asarray(one_way.noisy[(p.name,)], dtype=np.float64)
        noise = one_way.noise[(p.name,)]
        keep = max(
            threshold * math.sqrt(noise.variance), noise_tail_point(noise, MISSING_KEEP_RATE)
        )
        if not p.missing or len(p.states) < 2 or y[-1] >= keep:
            out.append(p)
            continue
        to = int(np.argmax(y[:-1]))
        out.append(replace(p, states=p.states[:-1], missing=False, missing_to=to))
        noisy[(p.name,)] = one_way.noisy[(p.name,)][:-1]
    folded = [repr(p.name) for p, q in zip(out, plans, strict=True) if p is not q]
    if not folded:
        return plans, one_way
    notes.append(
        f"missing state folded away (noisy count below {threshold:g} noise standard "
        "deviations, or below what noise alone reaches once in 1,200 columns) in "
        f"{', '.join(folded)}: missing values, if any, are encoded as the state with the "
        "largest noisy count"
    )
    names = [p.name for p in out]
    full = Domain(names, [len(p.states) for p in out], [p.states for p in out])
    return out, one_way.with_tables(noisy, domain=full)


def _merge_rare(plan: ColumnPlan, one_way: NoisyMarginals, threshold: float) -> ColumnPlan:
    """MST's ``compress_domain``: states whose noisy count is below ``threshold`` noise
    standard deviations are merged (when there are at least two of them)."""
    y = np.asarray(one_way.noisy[(plan.name,)], dtype=np.float64)
    sigma = math.sqrt(one_way.noise[(plan.name,)].variance)
    rare = np.flatnonzero(y < threshold * sigma)
    return replace(plan, merged=tuple(int(i) for i in rare)) if rare.size >= 2 else plan


@dataclass(frozen=True)
class Spent:
    """What :func:`spend` gives: the columns' ``plans`` (final), the noisy ``one_way``
    tables (``None``: no release) and the kept rows' compressed ``codes``, one column each,
    in the plans' order."""

    plans: list
    one_way: NoisyMarginals | None
    codes: np.ndarray


def spend(df, drafts, steps, opts, gen, acc, notes) -> Spent:
    """The private steps, in order: bins at private quantiles, then the one-way release and
    the merging of rare states (MST). The table is encoded once: each draft's codes, a
    column cut at private quantiles encoded again at its edges."""
    b_col, b_m, mechanism = steps
    k = opts.max_records_per_person
    plans = [_edges(d, b_col, opts.grid, gen, acc, k) for d in drafts]
    full = np.column_stack(
        [
            d.codes if d.values is None else p.encode_full(df[p.name])
            for d, p in zip(drafts, plans, strict=True)
        ]
    )
    if b_m is None:
        return Spent(plans, None, _compressed(plans, full))
    one_way = _one_way(full, plans, b_m, mechanism, gen, acc, k)
    plans, one_way = _fold_missing(plans, one_way, opts.threshold, notes)
    plans = [_merge_rare(p, one_way, opts.threshold) for p in plans]
    notes.append("the number of records is not released: estimated from the noisy one-way tables")
    notes += [
        f"{p.name!r}: {len(p.merged)} states with noisy counts below {opts.threshold:g} "
        "noise standard deviations merged into '<rare>'"
        for p in plans
        if p.merged
    ]
    return Spent(plans, one_way, _compressed(plans, full))


def _compressed(plans, full: np.ndarray) -> np.ndarray:
    """The compressed codes under the final ``plans`` of the ``full`` codes made before the
    missing states were folded away (:meth:`~.columns.ColumnPlan.folded`)."""
    return np.column_stack([p.compress(p.folded(full[:, j])) for j, p in enumerate(plans)])


def _edges(d, b_col, grid, gen, acc, k: int) -> ColumnPlan:
    """The column's plan, its edges drawn at private quantiles when still open."""
    if d.values is None:
        return d.plan
    edges = quantile_edges(
        d.values,
        d.n_bins,
        d.bounds,
        budget=b_col,
        grid=grid,
        rng=gen,
        accountant=acc,
        what=f"prepare: quantile of {d.plan.name!r} at",
        max_records_per_person=k,
    )
    return ColumnPlan.numeric(
        d.plan.name,
        edges,
        f"private quantiles ({len(edges) - 1} bins)",
        d.plan.missing,
        d.plan.clip,
        d.plan.integer,
    )


def spent(budget: Budget | None, charges: tuple[Charge, ...]) -> Budget | None:
    if not charges:
        return None
    fresh = Accountant(budget)
    for ch in charges:
        fresh.charge(ch.cost, what=ch.what, mechanism=ch.mechanism)
    return fresh.spent
