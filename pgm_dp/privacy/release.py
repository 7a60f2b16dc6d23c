"""Release of noisy sufficient statistics (Bernstein et al. 2017, Sec. 3.1).

The sufficient statistics of an MRF with clique set ``C`` are the clique count tables
``n_C``. Under add/remove-one neighbours one record changes each table by 1 in one cell, so the
stacked tables have L1 sensitivity ``|C|`` (Prop. 3) and L2 sensitivity ``sqrt(|C|)``; the
Laplace release is ``y_C = n_C + Laplace(|C|/ε)`` (Eq. 3). The four mechanisms of
:func:`~pgm_dp.privacy.mechanisms.perturb` are available; the release is one mechanism call on
the stacked tables and one accountant charge. The default is the exact discrete Laplace
(Canonne, Kamath & Steinke 2020) with Eq. 3's scale ``|C|/ε``: the float Laplace of Eq. 3 is
not private in floating point (Mironov 2012); ``mechanism="laplace"`` reproduces the paper
with exact discrete Laplace noise on a lattice ``2^k Z``, ``2^20 <= b/2^k < 2^21``
(:mod:`~pgm_dp.privacy.lattice`), modelled as ``NoiseModel("laplace", b)``.

Sensitivity options
-------------------
* ``neighbouring="replace"`` (replace-one): one record moves between two cells of each
  table, so L1 = ``2|C|`` and L2 = ``sqrt(2|C|)``.
* ``max_records_per_person=K``: a person owns up to ``K`` records; sensitivities are
  multiplied by ``K`` (per table the change has L1 and L2 norm at most ``K``).
* ``weights`` (Sec. 4.2): per-record weights in ``[0, 1]`` (e.g. ``1/K`` for a person with
  ``K`` records); the tables are weighted counts. **If each person's weights sum to at most
  1** (the caller's responsibility: person ids are not seen here), a person changes each table
  by a vector of L1 norm ``<= 1`` (hence L2 ``<= 1``), so the sensitivities stay ``|C|`` and
  ``sqrt(|C|)``. Weighted counts are not integers, so the discrete mechanisms refuse
  non-integer weights. ``weights`` and ``max_records_per_person`` are mutually exclusive.

The total ``N``
---------------
``total="estimate"`` (default) releases no exact ``N``: it is the inverse-variance weighted mean
of the noisy table sums (post-processing, no extra cost; at least 1), stored with
``total_source="estimate"``. ``total="private"`` spends ``total_fraction`` of the budget on a
noisy count (same mechanism, sensitivity ``K`` or 1; the cliques get the rest; refused under
replace-one neighbours, where ``N`` does not change). Pass a number for a known public
population size (``"given"``). ``total="public"`` is the papers' convention (Bernstein et al.
treat ``N`` as public): the exact number of records (or sum of the weights) is stored in the
release, **outside the guarantee** — under add/remove-one neighbours ``N`` is exactly what
differs, so a release with ``total="public"`` tells ``D`` from ``D`` plus one record every time.
The reproductions of the papers pass it explicitly.

Example
-------
>>> import numpy as np
>>> from pgm_dp import Domain
>>> from pgm_dp.privacy import PureDP
>>> dom = Domain(["A", "B", "C"], [2, 2, 3])
>>> data = np.array([[0, 1, 2], [1, 1, 0], [0, 0, 1]])
>>> rel = release_marginals(data, [("A", "B"), ("B", "C")], dom, budget=PureDP(1.0), rng=0)
>>> rel.noise[("A", "B")]
NoiseModel(kind='discrete_laplace', scale=2.0)
>>> NoisyMarginals.from_json(rel.to_json()) == rel
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..domain import MAX_TABLE_CELLS, Clique, Domain, check_table_cells, normalize_cliques
from ..errors import DataValidationError, DomainError, PrivacyParameterError
from ..tables import contingency_table
from .accountant import Accountant, check_accountant
from .budget import Budget, compose
from .measurements import Measurements
from .mechanisms import perturb
from .samplers import RngLike, as_generator

__all__ = [
    "NoisyMarginals",
    "Measurements",
    "release_marginals",
    "MECHANISMS",
    "check_records_per_person",
]

MECHANISMS = ("laplace", "gaussian", "discrete_laplace", "discrete_gaussian")
_TOTALS = ("public", "estimate", "private")


#: The release's type: :class:`~pgm_dp.privacy.measurements.Measurements` (the name kept for
#: the call sites and the JSON format).
NoisyMarginals = Measurements


def _resolve(mrf_or_cliques: Any, domain: Domain | None) -> tuple[Domain, tuple[Clique, ...]]:
    if hasattr(mrf_or_cliques, "domain") and hasattr(mrf_or_cliques, "cliques"):
        dom = mrf_or_cliques.domain
        if domain is not None and domain != dom:
            raise DomainError(f"domain {domain} differs from the model's domain {dom}")
        raw = mrf_or_cliques.cliques
    else:
        if domain is None:
            raise DomainError("domain= is required when cliques are given as a list")
        dom, raw = domain, mrf_or_cliques
    if not isinstance(dom, Domain):
        raise DomainError(f"domain must be a Domain, got {type(dom).__name__}")
    cliques = normalize_cliques(dom, raw)
    if not cliques:
        raise DomainError("at least one clique is needed")
    seen: dict[frozenset, Clique] = {}
    for c in cliques:  # a repeated clique would be charged twice but released once
        if frozenset(c) in seen:
            raise DomainError(f"clique {c} repeats {seen[frozenset(c)]} (same variables)")
        seen[frozenset(c)] = c
    return dom, cliques


def _weights(weights: Any, n: int, discrete: bool) -> np.ndarray | None:
    if weights is None:
        return None
    try:
        w = np.array(weights, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as err:
        raise DataValidationError(f"weights must be numeric: {err}") from None
    if w.shape != (n,):
        raise DataValidationError(f"weights must have shape ({n},), got {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0) or np.any(w > 1):
        raise DataValidationError("weights must be finite and in [0, 1] (Sec. 4.2: 1/K)")
    if discrete and np.any(w != np.round(w)):
        raise DataValidationError("discrete mechanisms need integer counts: weights in {0, 1}")
    return w


def _sensitivity(mechanism: str, n_cliques: int, per_person: int, neighbouring: str) -> float:
    """L1 (Laplace kinds) or L2 (Gaussian kinds) sensitivity of the stacked clique tables:
    each person changes one cell per clique per record (Bernstein et al. Prop. 3), two under
    replace-one neighbours."""
    factor = 2 if neighbouring == "replace" else 1
    if mechanism.endswith("laplace"):
        return per_person * n_cliques * factor
    return per_person * math.sqrt(n_cliques * factor)


def check_records_per_person(k: Any) -> int:
    """``K``, the most records of one person, checked: an integer ``>= 1``."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise PrivacyParameterError(f"max_records_per_person must be an integer >= 1, got {k!r}")
    return int(k)


def _check_options(
    mechanism, neighbouring, max_records_per_person, weights, total, total_fraction
) -> int:
    """Validate the release options; the records per person (1 unless bounded)."""
    if mechanism not in MECHANISMS:
        raise PrivacyParameterError(f"mechanism must be one of {MECHANISMS}, got {mechanism!r}")
    if neighbouring not in ("add_remove", "replace"):
        raise PrivacyParameterError("neighbouring must be 'add_remove' or 'replace'")
    if max_records_per_person is not None:
        check_records_per_person(max_records_per_person)
        if weights is not None:
            raise PrivacyParameterError("give weights or max_records_per_person, not both")
    if isinstance(total, str):
        if total not in _TOTALS:
            raise PrivacyParameterError(f"total must be a number or one of {_TOTALS}")
    elif isinstance(total, bool) or not math.isfinite(float(total)) or float(total) < 0:
        raise PrivacyParameterError(f"a given total must be finite and >= 0, got {total!r}")
    if total == "private" and neighbouring == "replace":
        raise PrivacyParameterError(
            "under replace-one neighbours the number of records never changes; use "
            "total='public' or a number (with weights, whose sum can change: 'estimate')"
        )
    if total == "private" and not 0 < total_fraction < 1:
        raise PrivacyParameterError(f"total_fraction must be in (0, 1), got {total_fraction}")
    return 1 if max_records_per_person is None else int(max_records_per_person)


def _noisy_tables(dom, cliques, data, weights, sens, budget, what, how):
    """``(noisy tables, noise model, N, whether N is a count)``: the clique count tables of
    ``data`` (weighted if ``weights``) released together by :func:`perturb` under ``how``."""
    codes = dom.encode(data)
    discrete = how["kind"].startswith("discrete")
    w = _weights(weights, codes.shape[0], discrete)
    if w is not None and discrete:
        w = None if np.all(w == 1) else w
    tables = [contingency_table(codes, [dom.index(v) for v in c], dom.sizes(c), w) for c in cliques]
    if discrete:
        tables = [np.rint(t).astype(np.int64) for t in tables]
    flat = np.concatenate([np.ravel(t) for t in tables])
    noisy_flat, model = perturb(flat, sensitivity=sens, budget=budget, what=what, **how)
    noisy, start = {}, 0
    for c, t in zip(cliques, tables, strict=True):
        noisy[c] = noisy_flat[start : start + t.size].reshape(t.shape)
        start += t.size
    n_true = float(codes.shape[0]) if w is None else float(w.sum())
    return noisy, model, n_true, w is None or discrete


def _total_fields(total, noisy, model, n_true, counts, sens_n, budget_n, what, how) -> dict:
    """The release's ``total``, ``total_source`` and ``total_noise`` (module docstring):
    with ``total="private"`` the number of records (or sum of the weights; rounded first
    when it counts records) released by the tables' mechanism with ``budget_n``
    (sensitivity ``sens_n``: ``K`` or 1), else :func:`_public_total`."""
    if total != "private":
        n_out, source = _public_total(total, n_true, noisy, model)
        return dict(total=n_out, total_source=source, total_noise=None)
    n_val = round(n_true) if counts else n_true
    noisy_n, noise = perturb(
        [n_val], sensitivity=sens_n, budget=budget_n, what=f"{what}: total N", **how
    )
    return dict(total=float(noisy_n[0]), total_source="private", total_noise=noise)


def _public_total(total, n_true: float, noisy: dict, model) -> tuple[float, str]:
    """``(N, source)`` when N is not released with noise: the true count (``"public"``), the
    given number, or the inverse-variance weighted mean of the noisy tables' sums (at least 1,
    since every consumer divides by it)."""
    if total == "estimate":
        sums = np.array([t.sum() for t in noisy.values()], dtype=np.float64)
        var = np.array([t.size for t in noisy.values()], dtype=np.float64) * model.variance
        wts = 1.0 / np.maximum(var, 1e-300)
        return max(float(np.sum(wts * sums) / np.sum(wts)), 1.0), "estimate"
    if total == "public":
        return n_true, "public"
    return float(total), "given"


def _check_costs(budget, fraction, sens, sens_n, checks, what):
    """The tables' budget and the total's (``None`` unless ``fraction`` of ``budget`` goes to
    a private ``N``), checked against the mechanism and the accountant without drawing
    anything (noise on an empty vector): every refusal comes before the data are read."""
    mechanism, calibration = checks["kind"], checks["calibration"]
    accountant = checks["accountant"]
    budget_c = budget.split(1 - fraction) if fraction is not None else budget
    budget_n = budget.split(fraction) if fraction is not None else None
    perturb([], kind=mechanism, sensitivity=sens, budget=budget_c, calibration=calibration)
    if budget_n is not None:
        perturb([], kind=mechanism, sensitivity=sens_n, budget=budget_n, calibration=calibration)
    if accountant is not None:
        accountant.check(budget if budget_n is None else compose(budget_c, budget_n), what=what)
    return budget_c, budget_n


def release_marginals(
    data: Any,
    mrf_or_cliques: Any,
    domain: Domain | None = None,
    *,
    budget: Budget,
    mechanism: str = "discrete_laplace",
    rng: RngLike = None,
    accountant: Accountant | None = None,
    weights: Sequence[float] | np.ndarray | None = None,
    max_records_per_person: int | None = None,
    total: str | float = "estimate",
    total_fraction: float = 0.1,
    neighbouring: str = "add_remove",
    calibration: str = "analytic",
    what: str = "marginals",
    max_cells: int = MAX_TABLE_CELLS,
) -> NoisyMarginals:
    """Noisy clique count tables (Bernstein et al. Sec. 3.1, Prop. 3, Eq. 3).

    Args:
        data: The records (codes or labels, validated by :meth:`Domain.encode`).
        mrf_or_cliques: Cliques (then ``domain`` is required) or an object with ``.domain``
            and ``.cliques``.
        domain: The variables, when ``mrf_or_cliques`` is a list of cliques.
        budget: ``PureDP`` for the Laplace kinds, ``ZCDP`` or ``ApproxDP`` for the Gaussian
            kinds; the whole release's cost (the sensitivities: module docstring).
        mechanism: ``"discrete_laplace"`` (default; CKS 2020), ``"discrete_gaussian"``, or
            the paper's ``"laplace"`` / ``"gaussian"`` exactly on a lattice ``2^k Z``
            (:mod:`~pgm_dp.privacy.lattice`); all floating-point safe (Mironov 2012).
        rng: Leave ``None`` for a real release (ChaCha20 keyed from the OS). A seed makes
            the noise reproducible, so whoever knows it recovers every count: for tests.
        accountant: Charged once, before any noise is drawn.
        weights: Per-record weights (module docstring: the sensitivity they give).
        max_records_per_person: ``K``, most records of one person (module docstring).
        total: The total ``N``: ``"estimate"`` (from the noisy tables, free), ``"private"``
            (released with ``total_fraction`` of the budget) or a public number.
        total_fraction: The share of ``budget`` spent on ``N`` with ``total="private"``.
        neighbouring: ``"add_remove"`` or ``"replace"`` (doubles the sensitivity).
        calibration: The ``(ε, δ)`` Gaussian's (:func:`~.mechanisms.gaussian_mechanism`).
        what: The label of the charge in the accountant's ledger.
        max_cells: The most cells the tables may have in all.

    Returns:
        The release: noisy tables, their noise, the total and the budget spent.

    Everything is validated before the accountant is charged or noise drawn; refused before
    anything is allocated or spent: more than ``max_cells`` cells in all (ModelTooLargeError),
    a repeated clique (in any order: charged twice), an ``accountant`` that is not one.
    """
    dom, cliques = _resolve(mrf_or_cliques, domain)
    check_table_cells(dom, cliques, max_cells)  # before anything is allocated or spent
    check_accountant(accountant)
    per_person = _check_options(
        mechanism, neighbouring, max_records_per_person, weights, total, total_fraction
    )
    n_c = len(cliques)
    sens, sens_n = _sensitivity(mechanism, n_c, per_person, neighbouring), float(per_person)
    checks = dict(kind=mechanism, accountant=accountant, calibration=calibration)
    fraction = total_fraction if total == "private" else None
    budget_c, budget_n = _check_costs(budget, fraction, sens, sens_n, checks, what)
    how = dict(checks, rng=as_generator(rng))
    noisy, model, n_true, counts = _noisy_tables(
        dom, cliques, data, weights, sens, budget_c, f"{what} ({n_c} cliques)", how
    )
    n = _total_fields(total, noisy, model, n_true, counts, sens_n, budget_n, what, how)
    return NoisyMarginals.from_tables(
        dom,
        cliques,
        noisy,
        dict.fromkeys(cliques, model),
        budget=budget,
        mechanism=mechanism,
        sensitivity=float(sens),
        neighbouring=neighbouring,
        **n,
    )
