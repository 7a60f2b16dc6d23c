"""The fit's private check against the independent model on the workload.

A model fitted to noisy tables can be worse on the workload (the marginals the user asked
for) than the **private independent model**, the product of the noisy one-way tables that
every fit has already paid for (:func:`independent_model`). The fit report's misfit score
(:func:`pgm_dp.table.report.independent_check`) compares the two models with the noisy
tables the fit was made from, so it cannot see it: the unselected marginals were never
measured. This check spends a small held-out share of the budget (:data:`CHECK_SHARE`) on
one number, the weighted workload error of the fitted model minus that of the independent
model,

    ``T = sum_W c_W (||M_W(D) - N̂ q_W||_1 - ||M_W(D) - N̂ r_W||_1)``,

(``M_W(D)`` the counts of workload marginal ``W`` of weight ``c_W``, ``q`` the fitted and
``r`` the independent model, ``N̂`` the release's estimated number of records). Both models
and ``N̂`` are functions of tables already released, so they are fixed when ``T`` is
measured (adaptive composition). Adding or removing one record changes one cell of each
``M_W(D)`` by 1, which moves each absolute value by at most 1 and each difference of two by
at most 2: ``T`` has sensitivity ``2 sum_W c_W`` (L1 = L2 for one number), and
``2 K sum_W c_W`` when one person owns up to ``K`` records (:mod:`pgm_dp.prepare.persons`). ``T`` is
released by the Laplace (pure ε) or the Gaussian (zCDP) mechanism of
:func:`pgm_dp.privacy.mechanisms.perturb` (exact, on a lattice), charged to the fit's
accountant before the noise is drawn. In units of the weighted mean total variation,
``D = T / (2 N̂ sum_W c_W)`` has noise ``b = K / (N̂ ε_c)`` (Laplace) or
``σ = K / (N̂ sqrt(2 ρ_c))``.

The check is not run (a note in the report) when its nominal noise is above
:data:`MAX_CHECK_NOISE`: with few records or a tiny budget its verdict would be a coin flip.
Where the one-way tables are released before selection, this is decided from their ``N̂``
and the share goes to selection; otherwise after selection, and the share is left unspent.
When ``D > 0`` (the fitted model looks worse) the fit falls
back to the independent model (post-processing: a choice between two released models by a
released number) and the report says so. Expected loss of the decision: when the true gap is
``g``, the wrong model is kept with probability ``exp(-|g|/b)/2`` (Laplace), so the expected
loss is at most ``b / (2e)``. The share is our choice (the paper-free part of the workflow):
2 % of the budget, which at ``N̂ = 40 000`` and pure ``ε = 0.3`` gives ``b ≈ 0.004`` in
total variation, against the 4 % more noise it costs AIM's rounds.

Two more guards against the independent model, both post-processing of released tables:
:func:`floored_model` leaves no cell at zero probability (a fit follows a cell's negative
noisy count to zero, and held-out records in that cell get ``log p`` of ``-20`` and
below), and :func:`apply_misfit_check` returns the independent model when the penalised
misfit of :func:`pgm_dp.table.report.independent_check` finds the fit no better, at every
budget and ``N`` (where the check above is not run, too).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from ..errors import PrivacyParameterError
from ..privacy.mechanisms import perturb

__all__ = [
    "CHECK_SHARE",
    "MAX_CHECK_NOISE",
    "check_noise",
    "check_skipped",
    "check_share",
    "one_way_probabilities",
    "independent_model",
    "workload_gap",
    "release_check",
    "fit_check",
    "apply_check",
    "apply_misfit_check",
    "expected_abs_noise",
    "floor_weight",
    "floored_model",
]

#: Share of the whole budget held out for the check (module docstring).
CHECK_SHARE = 0.02
#: Largest nominal noise of the check (mean total variation, :func:`check_noise`) worth
#: running it: noisier, its verdict would be a coin flip, and it is not run (our choice).
MAX_CHECK_NOISE = 0.01


def check_noise(budget, n_hat: float, k: int = 1) -> float:
    """The nominal noise scale of ``D`` (module docstring) with ``budget``, ``N̂``
    records and at most ``k`` of one person: ``k / (N̂ ε)`` (Laplace) or
    ``k / (N̂ sqrt(2 ρ))`` (Gaussian), from public quantities only."""
    return k * budget.noise_scale(budget.amount) / max(n_hat, 1.0)


def check_skipped(budget, n_hat: float, k: int = 1) -> str | None:
    """Why the check with ``budget`` (``None``: no check) and ``N̂`` records is not worth
    running (its nominal noise, :func:`check_noise`, above :data:`MAX_CHECK_NOISE`), or
    ``None``. Public quantities only: :func:`~pgm_dp.table.fit.fit_table` asks once the
    one-way tables are released, so that a skipped check's share goes to selection. ``k``:
    the most records of one person."""
    if budget is None:
        return None
    noise = check_noise(budget, n_hat, k)
    if noise <= MAX_CHECK_NOISE:
        return None
    return (
        f"its noise ({noise:.3g} in total variation, N about {n_hat:,.0f}) would be above "
        f"{MAX_CHECK_NOISE}"
    )


def check_share(share: Any) -> float:
    """``share`` (``None``: :data:`CHECK_SHARE`) checked to lie in ``[0, 0.5]``; 0 turns
    the check off."""
    share = CHECK_SHARE if share is None else share
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share <= 0.5:
        raise PrivacyParameterError(f"check_share must be in [0, 0.5], got {share!r}")
    return float(share)


def _clipped_one_way(release) -> dict | None:
    """Each variable's noisy one-way table clipped at 0, in domain order, or ``None`` when
    some variable has no one-way table in ``release``."""
    attrs = release.domain.attributes
    if not {(a,) for a in attrs} <= set(release.cliques):
        return None
    return {a: np.maximum(np.asarray(release.noisy[(a,)], dtype=np.float64), 0) for a in attrs}


def one_way_probabilities(release) -> dict | None:
    """Each variable's noisy one-way table clipped at 0 and normalised, or ``None`` when some
    variable has no one-way table in ``release`` (post-processing)."""
    one = _clipped_one_way(release)
    return None if one is None else {a: y / max(y.sum(), 1e-300) for a, y in one.items()}


def expected_abs_noise(noise) -> float:
    """``E|X|`` of one cell's noise (Laplace ``b``; Gaussian ``sqrt(2/π) σ``)."""
    sd = math.sqrt(noise.variance)
    return sd / math.sqrt(2) if noise.is_laplace else sd * math.sqrt(2 / math.pi)


def floor_weight(release) -> float:
    """The weight ``λ = A / (N̂ + A)`` of the independent model in :func:`floored_model`:
    ``A`` is the largest expected absolute noise of one cell over the release's tables,
    ``N̂`` the release's estimated number of records (released quantities only).

    ``A`` is the posterior mean of a count whose noisy value is zero under a flat prior on
    the non-negative counts: exactly ``b`` for Laplace noise (for any noisy value at or
    below zero the posterior is exponential with mean ``b``), ``σ sqrt(2/π)`` for Gaussian
    noise; both are ``E|noise|``. A cell the noise pushed to zero may thus hold ``A``
    records; the floor puts ``A`` records' worth of mass, a Dirichlet prior of that total
    centred on the independent model, under every table (our choice of the total: the
    noisiest table's ``A``, the least that keeps one noisy cell's uncertainty)."""
    n_hat = max(float(release.total), 1.0)
    a = max(expected_abs_noise(release.noise[c]) for c in release.cliques)
    return a / (n_hat + a)


def floored_model(model, release, weight: float | None = None):
    """``model`` with no cell of zero probability: on ``model``'s junction tree, each
    clique's marginal mixed with the private independent model's (:func:`independent_model`)
    at weight ``λ`` (default :func:`floor_weight`), ``(1 - λ) μ_C + λ r_C``, and the
    decomposable model of those marginals returned, ``prod_C μ'_C / prod_S μ'_S``: the
    mixture's marginals on every junction-tree clique. Both families are consistent, so the
    mixed one is; each conditional factor ``μ'_C / μ'_S`` is at least ``λ r_C / μ'_S``,
    where the fit alone could be zero. Its marginals on the junction-tree cliques differ
    from ``model``'s by ``λ`` times the gap to the independent model's (at most ``λ`` in
    total variation). Post-processing of ``release``. Returns an MRF on the junction tree's
    cliques (the model itself when ``release`` lacks a one-way table)."""
    from ..inference.queries import calibrate_tables
    from ..models import MarkovRandomField

    one = _clipped_one_way(release)
    if one is None:
        return model
    lam = floor_weight(release) if weight is None else float(weight)
    probs = {a: (y + 1e-9) / (y + 1e-9).sum() for a, y in one.items()}
    jt = model.junction_tree()
    beliefs, _ = calibrate_tables(jt, model.log_potentials)
    mixed = []
    for clique, belief in zip(jt.cliques, beliefs, strict=True):
        r = np.ones(())
        for a in clique:
            r = np.multiply.outer(r, probs[a])
        mixed.append((1 - lam) * np.asarray(belief, dtype=np.float64) + lam * r)
    tables = [np.log(m) for m in mixed]
    for child, parent in _tree_parents(jt):
        keep = set(jt.separator(child, parent))
        axes = tuple(k for k, a in enumerate(jt.cliques[child]) if a not in keep)
        tables[child] = tables[child] - np.log(mixed[child].sum(axis=axes, keepdims=True))
    return MarkovRandomField(model.domain, list(jt.cliques), tables)


def _tree_parents(jt) -> list[tuple[int, int]]:
    """``(child, parent)`` of every junction-tree edge, oriented away from ``jt.root``."""
    adjacent: dict[int, list[int]] = {i: [] for i in range(len(jt.cliques))}
    for i, j in jt.edges:
        adjacent[i].append(j)
        adjacent[j].append(i)
    out, seen, stack = [], {jt.root}, [jt.root]
    while stack:
        i = stack.pop()
        for j in adjacent[i]:
            if j not in seen:
                seen.add(j)
                out.append((j, i))
                stack.append(j)
    return out


def independent_model(release):
    """The private independent model: the product of the release's noisy one-way tables
    (clipped at 0, ``1e-9`` added, normalised), as a
    :class:`~pgm_dp.models.MarkovRandomField` on its domain; ``None`` when some variable has
    no one-way table in ``release``."""
    from ..models import MarkovRandomField

    one = _clipped_one_way(release)
    if one is None:
        return None
    tables = [np.log((y + 1e-9) / (y + 1e-9).sum()) for y in one.values()]
    return MarkovRandomField(release.domain, [(a,) for a in one], tables)


def workload_gap(codes: np.ndarray, domain, workload, fitted, independent, n_hat: float):
    """``(T, sensitivity)`` of the module docstring: the weighted L1 workload error (counts)
    of ``fitted`` minus that of ``independent`` over ``workload`` (``((clique, c_W), ...)``)
    on ``codes``, and its sensitivity ``2 sum_W c_W``. Reads the data: release it only
    through :func:`release_check`."""
    from ..select.aim import model_marginals
    from ..tables import contingency_table

    codes = domain.encode(codes)
    cliques = [c for c, _ in workload]
    q = model_marginals(fitted, cliques)
    r = model_marginals(independent, cliques)
    total = 0.0
    for (c, w), qc, rc in zip(workload, q, r, strict=True):
        m = contingency_table(codes, [domain.index(v) for v in c], domain.sizes(c))
        total += w * (np.abs(m - n_hat * qc).sum() - np.abs(m - n_hat * rc).sum())
    return total, 2.0 * math.fsum(w for _, w in workload)


def release_check(
    codes, domain, workload, fitted, release, budget, *, rng, accountant, k: int = 1
) -> dict:
    """The check of the module docstring with ``budget`` (``PureDP``: Laplace; ``ZCDP``:
    Gaussian), charged to ``accountant`` before the noise is drawn; ``k``: the most records
    of one person in ``codes``, which multiplies the sensitivity. Returns the report's
    ``workload_check`` entry: ``gap`` (noisy ``D``, weighted mean total variation of the fitted
    model minus the independent model's), ``noise_scale`` (``b`` or ``σ`` of ``D``), the
    ``cost``, the workload's size and ``worse_than_independent`` (``gap > 0``); ``None``
    (nothing charged) when the release lacks a one-way table or the workload has no weight.
    The independent model is under the entry's key ``"model"`` (not JSON; popped by the
    caller)."""
    independent = independent_model(release)
    weights = math.fsum(w for _, w in workload)
    if independent is None or weights <= 0:
        return None
    n_hat = max(float(release.total), 1.0)
    gap, sens = workload_gap(codes, domain, workload, fitted, independent, n_hat)
    kind = "laplace" if budget.is_pure else "gaussian"
    noisy, noise = perturb(
        np.array([gap]),
        kind=kind,
        sensitivity=k * sens,
        budget=budget,
        rng=rng,
        accountant=accountant,
        what="fit check: workload error, fitted minus independent",
    )
    unit = 2 * n_hat * weights
    d = float(noisy[0]) / unit
    return {
        "gap": d,
        "noise_scale": noise.scale / unit,
        "noise": noise.kind,
        "cost": str(budget),
        "workload_marginals": len(workload),
        "worse_than_independent": d > 0,
        "model": independent,
    }


def fit_check(codes, dom, workload, model, release, budget, gen, acc, k: int = 1):
    """The held-out check (:func:`release_check`), or ``None`` (nothing charged) with no
    check budget, no multi-way table (the model is the independent one) or no usable
    workload on the prepared domain; ``{"skipped": why}`` (nothing charged; the share is
    left unspent) when its nominal noise (:func:`check_noise`) is above
    :data:`MAX_CHECK_NOISE`. ``k``: the most records of one person in ``codes``."""
    from ..errors import DomainError
    from ..select import workload_cliques

    if budget is None or all(len(c) == 1 for c in release.cliques):
        return None
    skipped = check_skipped(budget, float(release.total), k)
    if skipped:
        return {"skipped": skipped}
    try:
        wl = workload_cliques(dom, workload)
    except DomainError:
        return None
    return release_check(codes, dom, wl, model, release, budget, rng=gen, accountant=acc, k=k)


def apply_check(fit, check, report):
    """Record the check in ``report`` and fall back to the independent model (post-processing)
    when the fitted one looks worse on the workload."""
    if "skipped" in check:
        report["notes"] = [*report["notes"], f"the workload check was not run: {check['skipped']}"]
        return fit
    independent = check.pop("model")
    check["fallback"] = bool(check["worse_than_independent"])
    report["workload_check"] = check
    if check["fallback"]:
        report["notes"] = [*report["notes"], "the independent model was returned (fit check)"]
        return replace(fit, model=independent, info={**fit.info, "fallback": "independent"})
    return fit


def apply_misfit_check(fit, release, report):
    """Fall back to the independent model (post-processing) when the report's penalised
    misfit check (:func:`pgm_dp.table.report.independent_check`, released tables only, so it
    runs at every budget and ``N``) finds the fitted model no better, unless the held-out
    check has already fallen back; the report says so (``report["fallback"]``)."""
    misfit = report.get("independent_check")
    if fit.info.get("fallback") == "independent":
        report["fallback"] = "workload check"
        return fit
    multi = any(len(c) > 1 for c in release.cliques)
    if misfit is None or not misfit["worse_than_independent"] or not multi:
        return fit
    report["fallback"] = "misfit check"
    report["notes"] = [
        *report["notes"],
        "the independent model was returned (the penalised "
        "misfit check found the fitted model no better)",
    ]
    model = independent_model(release)
    return replace(fit, model=model, info={**fit.info, "fallback": "independent"})
