"""What :func:`pgm_dp.table.fit.fit_table` plans before it runs, from the budget and released
quantities only: the budget's split (:func:`one_way_share`, :func:`split_budget`,
:func:`check_of`, :func:`rest_of`), AIM's number of rounds (:func:`aim_rounds`) and its default
workload (:func:`default_workload`). The rules are ours (the AIM paper, McKenna et al. 2022,
fixes ``T = 16 d`` and leaves the workload to the user), set from the real tables of
``benchmarks/bench_realdata.py``; its README has the measurements.

Budget split (data-independent, decided before anything is read):

* **One-way tables: a third of the budget** (``ONE_WAY_SHARE``), MST's rule (McKenna,
  Miklau & Sheldon 2021, Alg. 1 and private-pgm ``mechanisms/mst.py``: ``ρ/3`` measures
  the one-way marginals, which also decide the compression), **and at least**
  ``ONE_WAY_EPSILON`` **of a pure ε, up to half of it** (:func:`one_way_share`): at a
  small ε a third leaves the one-way tables so noisy that the compression merges states
  that carry real mass (expanded back evenly) and the model's one-way marginals are worse
  than the private independent model's. **Under zCDP** (``--delta``) the tables compose
  as squares and AIM itself measures the one-way tables at its rounds' noise (about 6 % of
  ``ρ`` with ``16 d`` rounds): there they get ``ZCDP_ONE_WAY_SHARE`` (0.15) of ``ρ``, at
  least ``ONE_WAY_RHO`` up to a third. A smaller pure share would compress columns with
  many states too coarsely. The constants are our choice, set from the real tables of
  ``benchmarks/bench_realdata.py`` (its README has the measurements), not derived. When
  some numeric column needs private quantiles, ``prepare_plan``'s ``quantile_share``
  (half) of that share pays for them.
  The share depends on the budget only, never on the data, and is never near zero.
* **AIM's rounds from N, the domain and ε.** With the one-way tables released, ``N`` is
  estimated from them (post-processing, :attr:`~pgm_dp.privacy.NoisyMarginals.total`), and
  AIM plans ``T`` rounds (:func:`aim_rounds`): as many as keep the first rounds' noise on
  a typical workload marginal (median cells ``n``) below ``TARGET_TVD`` in total
  variation, ``n · E|noise| / (2 N̂) <= TARGET_TVD``, at least one per variable (a
  spanning tree needs ``d - 1`` pairs) and at most AIM's default (``16 d`` for zCDP,
  ``2 d`` pure). Few records or a small ε give fewer, less noisy rounds; AIM's annealing
  (its Sec. 4) then adapts within them.
* **A cost cap on the rounds.** Every round scores and size-checks each of AIM's ``m``
  candidates (the workload's downward closure) and refits the model, so a run costs about
  ``T m`` candidate evaluations and ``T`` refits: the rounds are capped at
  ``T m <= ROUND_CANDIDATES`` (:data:`ROUND_CANDIDATES`, with at least ``d`` rounds), which
  depends on the domain's width only (``m``: the public workload's cliques), never on the
  data. Without it a large ``N̂`` planned AIM's ``16 d`` rounds under zCDP (240 on Adult's
  14 columns), each refitting a model that the size limit lets grow with the budget spent:
  hundreds of CPU seconds where the capped plan takes tens. The constant is our choice,
  set from ``benchmarks/bench_cost.py`` and the real tables (its README has the
  measurements): a larger one let Adult's model grow to twice the CPU under ``(ε, δ)``. For the same
  reason the pure default workload is every triple only while its candidates fit the cap
  at one round per variable (:func:`default_workload`): 20 columns have 1,350.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from itertools import combinations
from typing import Any

import numpy as np

from ..domain import Domain
from ..errors import DomainError, ModelTooLargeError, PrivacyParameterError
from ..privacy.budget import Budget, budget_of, notion_type, require_budget
from .aim import ROUNDS_PER_VARIABLE
from .schedule import MEASURE_SHARE, float_below
from .workload import Workload, resolve_workload

__all__ = [
    "ONE_WAY_SHARE",
    "ZCDP_ONE_WAY_SHARE",
    "ONE_WAY_EPSILON",
    "MAX_ONE_WAY_SHARE",
    "ONE_WAY_RHO",
    "TARGET_TVD",
    "TRIPLE_CELLS_RATIO",
    "ROUND_CANDIDATES",
    "split_budget",
    "one_way_share",
    "check_of",
    "rest_of",
    "aim_rounds",
    "most_rounds",
    "default_workload",
    "clique_of",
    "check_aim_options",
    "usable_workload",
]

#: Share of the budget for the one-way tables (and private quantiles): MST's third, at least.
ONE_WAY_SHARE = 1 / 3
#: Share of a zCDP budget (or ``(ε, δ)``, ``δ > 0``) for the one-way tables, at least.
ZCDP_ONE_WAY_SHARE = 0.15
#: Pure ε that the one-way tables get at least, within :data:`MAX_ONE_WAY_SHARE` of it.
ONE_WAY_EPSILON = 0.15
#: Largest share of a pure ε that :func:`one_way_share` gives the one-way tables.
MAX_ONE_WAY_SHARE = 1 / 2
#: ``ρ`` that :func:`one_way_share` gives the one-way tables at least, within a third.
ONE_WAY_RHO = 5e-4


def split_budget(budget: Budget, share: float) -> tuple[str, float, Budget, Budget]:
    """``(notion, amount, first, rest)``: the budget in AIM's unit (``"pure"`` ε or
    ``"zcdp"`` ρ; ``(ε, δ)`` converted) cut into ``share`` and ``1 - share``."""
    if not 0 < share < 1:
        raise PrivacyParameterError(f"the one-way share must be in (0, 1), got {share!r}")
    require_budget(budget, Budget, f"budget must be PureDP, ApproxDP or ZCDP, got {budget!r}")
    b = budget.native()
    return b.notion, b.amount, b.split(share), b.split(1 - share)


def one_way_share(budget: Budget) -> float:
    """The default share of ``budget`` for the one-way tables (module docstring): MST's
    third, raised under pure DP (``PureDP``, or ``ApproxDP`` with ``δ = 0``) to
    ``ONE_WAY_EPSILON / ε`` when that is more, and to at most :data:`MAX_ONE_WAY_SHARE`.
    A zCDP budget (or ``(ε, δ)`` with ``δ > 0``, as the ``ρ`` it converts to) gives them
    :data:`ZCDP_ONE_WAY_SHARE`, raised to ``ONE_WAY_RHO / ρ`` up to a third (module
    docstring). Depends on the budget only, never on the data.

    >>> from pgm_dp.privacy import ZCDP, PureDP
    >>> one_way_share(PureDP(1.0)), one_way_share(PureDP(0.3)), one_way_share(PureDP(0.1))
    (0.3333333333333333, 0.5, 0.5)
    >>> one_way_share(ZCDP(0.1)), one_way_share(ZCDP(0.002)), one_way_share(ZCDP(0.001))
    (0.15, 0.25, 0.3333333333333333)
    """
    if not getattr(budget, "is_pure", False):
        rho = budget.native().amount
        return min(ONE_WAY_SHARE, max(ZCDP_ONE_WAY_SHARE, ONE_WAY_RHO / rho))
    return min(MAX_ONE_WAY_SHARE, max(ONE_WAY_SHARE, ONE_WAY_EPSILON / budget.amount))


def check_of(whole: Budget, held: float) -> Budget | None:
    """The share ``held`` of ``whole`` (the run's budget in AIM's unit) held out for the
    workload check, rounded down; ``None``: no check."""
    check = float_below(Fraction(whole.amount) * Fraction(held))
    return budget_of(whole.notion, check) if check > 0 else None


def rest_of(charges, whole: Budget, check: Budget | None = None) -> Budget:
    """What is left of ``whole`` after ``charges`` and the ``check``'s budget
    (:func:`check_of`), rounded down (the exact sum <= budget)."""
    notion = whole.notion
    parts = [c.cost.to_zcdp().rho if c.cost.notion != notion else c.cost.amount for c in charges]
    held = Fraction(0) if check is None else Fraction(check.amount)
    left = float_below(Fraction(whole.amount) - sum(map(Fraction, parts), held))
    return budget_of(notion, left)


#: Total-variation error of one measured workload marginal that :func:`aim_rounds` aims at.
TARGET_TVD = 0.05
#: Largest ratio of the median triple's cells to the median pair's at which the pure
#: default workload is every triple (:func:`default_workload`; our choice, below the
#: argument's 9, between the tables of ``benchmarks/bench_realdata.py`` that gain from
#: triples and Adult, which keeps pairs).
TRIPLE_CELLS_RATIO = 7.0


#: Candidate evaluations that AIM's planned rounds may make in all: ``T m`` at most for
#: ``m`` candidates (module docstring), at least ``d`` rounds.
ROUND_CANDIDATES = 6000


def aim_rounds(
    n_hat: float,
    cells: list[int],
    notion: str,
    amount: float,
    d: int,
    sensitivity: float = 1.0,
    *,
    candidates: int | None = None,
) -> int:
    """AIM's ``T`` (:mod:`pgm_dp.table.fit`'s docstring): the largest ``T`` whose first
    rounds measure a marginal of the median size in ``cells`` with expected total-variation
    noise at most :data:`TARGET_TVD` given ``N̂`` records and the rounds' budget ``amount``
    (ε or ρ), clipped to ``[d, ROUNDS_PER_VARIABLE[notion] d]`` and, given ``candidates``
    ``m``, to ``max(d, ROUND_CANDIDATES // m)`` (the cost cap). Depends on released and
    public quantities only.

    Args:
        n_hat: the number of records estimated from the noisy one-way tables.
        cells: the cell counts of the workload's marginals.
        notion: ``"pure"`` or ``"zcdp"``, the unit of ``amount``.
        amount: the budget AIM's rounds share.
        d: the number of variables.
        sensitivity: that of one measured table (``K``, the most records of one person):
            the noise is that many times larger at the same cost.
        candidates: how many marginals AIM's rounds score (the workload's downward
            closure, :func:`~.workload.candidate_weights`); ``None``: no cost cap.

    >>> aim_rounds(48842, [100] * 10, "pure", 2 / 3, 14), aim_rounds(48842, [100], "pure", 0.1, 14)
    (28, 14)
    >>> wide = dict(n_hat=10**6, cells=[100], notion="zcdp", amount=0.1, d=14)
    >>> aim_rounds(**wide), aim_rounds(**wide, candidates=105)  # Adult: 91 pairs, 14 one-ways
    (224, 57)
    """
    n = float(np.median(cells)) if cells else 1.0
    allowed = 2 * max(n_hat, 1.0) * TARGET_TVD / (n * sensitivity)  # E|noise| per unit
    # b = T / (0.9 ε) (pure) or sqrt(2/pi) sigma, sigma = sqrt(T / (2 * 0.9 rho)) (zCDP)
    t = budget_of(notion, amount).split(MEASURE_SHARE).measurements_within(allowed)
    return int(min(max(math.floor(t), d), most_rounds(notion, d, candidates)))


def most_rounds(notion: str, d: int, candidates: int | None = None) -> int:
    """The most rounds :func:`aim_rounds` plans: AIM's default ``ROUNDS_PER_VARIABLE d``
    and, given ``candidates`` ``m``, at most ``max(d, ROUND_CANDIDATES // m)`` (the cost
    cap, module docstring). Depends on the notion and the public domain only.

    Args:
        notion: ``"pure"`` or ``"zcdp"``.
        d: the number of variables.
        candidates: how many marginals AIM's rounds score; ``None``: no cost cap.

    >>> most_rounds("zcdp", 20), most_rounds("zcdp", 20, candidates=210)  # 20 columns, pairs
    (320, 28)
    """
    top = ROUNDS_PER_VARIABLE[notion] * d
    if candidates is None:
        return top
    return min(top, max(d, ROUND_CANDIDATES // max(int(candidates), 1)))


def default_workload(domain: Domain, notion: str) -> Workload | None:
    """AIM's workload when none is given: ``None`` (every pair) under zCDP; under pure ε
    ``"3way"`` (every triple of at most ``WORKLOAD_MAX_CELLS`` cells, resolved on ``domain``:
    :func:`~.workload.resolve_workload`) when triples are
    cheap, the median such triple at most :data:`TRIPLE_CELLS_RATIO` times the cells of the
    median pair, and their ``m`` candidates (the triples, pairs and one-ways) fit the
    rounds' cost cap at one round per variable, ``m d <= ROUND_CANDIDATES``
    (:func:`most_rounds`: every round scores every candidate); else ``None``. Pure costs
    add up, so every table's noise scale grows with the number of tables measured, and a
    triple answers its three pairs for one table's price (a third of the noise); a pair
    read off it sums ``n3 / n2`` noisy cells per cell (``sqrt(n3 / n2)`` times the noise).
    The triple wins while ``n3 / n2 < 9`` when all three pairs are new, less when they
    overlap. Under zCDP, where the noise grows as the square root of the number of tables,
    triples did not help. The domain is the prepared one (public, or post-processing of
    the released one-way tables).

    Args:
        domain: the prepared domain AIM runs on.
        notion: ``"pure"`` or ``"zcdp"``.

    >>> from pgm_dp import Domain
    >>> small, large = Domain(list("abcd"), [2, 3, 4, 2]), Domain(list("abcd"), [30, 20, 40, 25])
    >>> default_workload(small, "pure").cells, default_workload(small, "zcdp")
    ((24, 12, 16, 24), None)
    >>> default_workload(large, "pure") is None  # triples 20-30 times the pairs' cells
    True
    >>> default_workload(Domain([f"x{i}" for i in range(20)], [2] * 20), "pure") is None
    True
    """
    if not notion_type(notion).is_pure or len(domain) < 3:
        return None
    try:
        triples = resolve_workload(domain, "3way")
    except (DomainError, ModelTooLargeError):  # every triple above WORKLOAD_MAX_CELLS
        return None
    if len(triples.candidates) * len(domain) > ROUND_CANDIDATES:
        return None
    pairs = [domain.size(c) for c in combinations(domain.attributes, 2)]
    cheap = np.median(triples.cells) <= TRIPLE_CELLS_RATIO * np.median(pairs)
    return triples if cheap else None


def clique_of(item) -> tuple:
    """The column names of one workload entry (a clique, a name, or ``(clique, weight)``)."""
    weighted = isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], tuple | list)
    raw = item[0] if weighted else item
    return (raw,) if isinstance(raw, str) or not hasattr(raw, "__iter__") else tuple(raw)


def check_aim_options(kept: list, options: tuple, compress: bool | None = None) -> None:
    """AIM's options ``(workload, max_model_size, max_rounds, estimator)``, checked before the
    preparation spends anything (AIM checks them again on the prepared domain): everything
    the declaration decides.

    Args:
        kept: the columns the declaration keeps (not dropped, not the person).
        options: ``(workload, max_model_size, max_rounds, estimator)``.
        compress: the preparation's ``compress`` option (``False``: AIM measures every
            one-way marginal first).
    """
    workload, max_model_size, max_rounds, estimator = options
    if estimator is not None and not callable(estimator):
        raise PrivacyParameterError(f"estimator must be callable, got {estimator!r}")
    size = max_model_size
    if isinstance(size, bool) or not isinstance(size, int | float) or not 0 < size < math.inf:
        raise PrivacyParameterError(f"max_model_size must be a positive number, got {size!r}")
    if max_rounds is not None and (
        isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1
    ):
        raise PrivacyParameterError(f"max_rounds must be a positive integer, got {max_rounds!r}")
    if workload is None or isinstance(workload, str):
        if workload not in (None, "2way", "3way"):
            raise PrivacyParameterError(f"workload must be '2way', '3way' or cliques: {workload!r}")
        k = 3 if workload == "3way" else 2
        if len(kept) < k:
            raise PrivacyParameterError(
                f"a {workload or '2way'} workload needs {k} columns or more; the declaration "
                f"keeps {len(kept)}"
            )
        used = set(kept)
    else:
        items = workload.keys() if isinstance(workload, Mapping) else workload
        used = {v for item in items for v in clique_of(item)}
        unknown = sorted(map(str, used - set(kept)))
        if unknown:
            raise PrivacyParameterError(f"the workload names columns not in the data: {unknown}")
    if compress is False and max_rounds is not None and max_rounds < len(used):
        raise PrivacyParameterError(  # without compression AIM measures every one-way first
            f"max_rounds={max_rounds} is below the {len(used)} one-way marginals measured first"
        )


def usable_workload(dom, workload) -> tuple[Workload | None, Any, list[str]]:
    """``(resolved, workload, notes)`` on the prepared domain, for what the declaration could
    not decide (dropped identifiers, the noisy compression): ``resolved``, the workload
    resolved once (:func:`~.workload.resolve_workload`), ``None`` when AIM has nothing to
    select; ``workload``, the form asked for less the marginals of dropped columns (one
    resolved on ``dom`` is taken as it is)."""
    notes = []
    if workload is not None and not isinstance(workload, str | Workload):
        items = list(workload.items()) if isinstance(workload, Mapping) else list(workload)
        names = set(dom.attributes)
        key = (lambda i: i[0]) if isinstance(workload, Mapping) else (lambda i: i)
        keep = [i for i in items if set(clique_of(key(i))) <= names]
        if len(keep) < len(items):
            notes.append(f"{len(items) - len(keep)} workload marginal(s) left out: dropped")
        workload = dict(keep) if isinstance(workload, Mapping) else keep
    try:
        resolved = resolve_workload(dom, workload)
    except (DomainError, ModelTooLargeError) as err:
        notes.append(
            f"AIM did not run ({err}): the one-way tables are fitted (the "
            "independent model); the rest of the budget is not spent"
        )
        return None, workload, notes
    return resolved, workload, notes
