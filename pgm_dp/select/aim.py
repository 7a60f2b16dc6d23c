"""AIM: an adaptive and iterative mechanism (McKenna, Mullins, Sheldon & Miklau 2022, VLDB).

AIM (the paper's Algorithm 2, which refines the MWEM+PGM template of its Algorithm 1)
chooses marginals to measure, one per round, against a workload (:mod:`.workload`):

1. *Initialise*: measure every one-way marginal of the candidates with Gaussian noise
   ``σ_0`` and estimate a model ``p̂_0`` from them.
2. *Select* (round ``t``): among the candidates whose model stays within the size limit
   ``max_model_size · ρ_used / ρ`` (:func:`~.workload.filter_candidates`; ours besides: no
   junction-tree clique above the model's largest table, so that a large ``max_model_size``
   never selects a marginal whose model would be refused after the charge), draw ``r`` by
   the exponential mechanism with ``ε_t`` on the quality
   ``q_r = w_r (||M_r(D) - M_r(p̂_{t-1})||_1 - sqrt(2/π) σ_t n_r)`` (``n_r`` cells,
   sensitivity ``max_r w_r``): large where the model is wrong by more than the noise a
   new measurement would add.
3. *Measure* ``M_r(D)`` with Gaussian noise ``σ_t``; *estimate* ``p̂_t`` from all
   measurements.
4. *Anneal*: if ``||M_r(p̂_t) - M_r(p̂_{t-1})||_1 <= sqrt(2/π) σ_t n_r`` the new
   measurement hardly moved the model: halve ``σ`` and double ``ε`` for the next rounds.
5. *Budget*: ``T = 16 d`` rounds are planned; a round with less than twice its cost left
   is the last and takes all that remains (:class:`~.schedule.Schedule`), so the whole
   budget is spent.

Steps and constants follow the reference implementation (``mechanisms/aim.py`` of
Private-PGM). Ours: every measurement goes through
:func:`~pgm_dp.privacy.release_marginals` (exact discrete Gaussian by default) and every
selection through the exact :func:`~pgm_dp.privacy.exponential_mechanism`, each charged to
the accountant before any noise is drawn; a selection costs ``ε² / 8`` in zCDP (the
exponential mechanism is ``ε``-bounded-range, Cesar & Rogers 2021), as in the paper. The
estimator inside the loop is ours (:mod:`.estimators`; the paper's is Private-PGM), and a
``PureDP`` budget runs a pure-DP variant with Laplace measurements
(:mod:`.schedule`). The number of records is never read from the data: the model's
counts use ``N`` estimated from the noisy tables unless a public ``total`` is given.

Persons: with ``max_records_per_person=K`` (one person owns at most ``K`` records, bounded
by the caller, :mod:`pgm_dp.prepare.persons`) every sensitivity is ``K`` times that of one
record: a measured table's L1 and L2 sensitivity is ``K`` (the ``K`` records may share a
cell), so its noise scale is ``K`` times larger at the same cost, and the quality score moves
by at most ``K max_r w_r``; the expected noise the scores subtract grows with it.

Privacy: the round costs are chosen adaptively (annealing reads the noisy estimates) and
never add up to more than the budget, so the run is ``ρ``-zCDP by the zCDP (Rényi)
filter (Feldman & Zrnic 2021), then ``(ε, δ)``-DP by the CKS conversion when the budget
was given so; the pure variant is ``ε``-DP by the pure-DP filter (Rogers, Roth, Ullman &
Vadhan 2016). These are the accountant's rules (:mod:`pgm_dp.privacy.accountant`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .._progress import step, tqdm
from ..domain import Clique, Domain
from ..errors import PrivacyParameterError
from ..inference.queries import calibrated
from ..privacy.accountant import Accountant, check_accountant
from ..privacy.argmax import exponential_mechanism
from ..privacy.budget import Budget, PureDP, budget_of, notion_type, require_budget
from ..privacy.measurements import Measurements
from ..privacy.release import NoisyMarginals, check_records_per_person, release_marginals
from ..rng import RngLike, as_generator
from ..tables import contingency_table
from .estimators import NaiveMLEEstimator, call_estimator, merged_release
from .schedule import Schedule
from .workload import filter_candidates, resolve_workload

__all__ = [
    "AIMRound",
    "AIMResult",
    "ScoredRound",
    "ROUNDS_PER_VARIABLE",
    "aim",
    "select_marginal",
    "should_anneal",
    "model_marginals",
]

#: Default ``T`` per variable: the paper's 16 (zCDP); 2 for the pure variant (:mod:`.schedule`).
ROUNDS_PER_VARIABLE = {"zcdp": 16, "pure": 2}


@dataclass(frozen=True)
class AIMRound:
    """One round of the budget log. ``round`` 0 measures the one-way marginals
    (``selection_epsilon`` is then ``None``). ``scale``: the noise ``σ`` (zCDP) or Laplace
    ``b`` (pure) asked for; ``measure_cost``/``select_cost``: ``ρ`` (zCDP) or ``ε`` (pure)
    charged; ``used``: the total charged so far; ``size_limit_mb``: the model-size limit
    of the selection; ``candidates``: how many passed it; ``annealed``: whether this round
    halved the noise of the next ones; ``last``: whether it took all that was left."""

    round: int
    cliques: tuple[Clique, ...]
    scale: float
    selection_epsilon: float | None
    measure_cost: float
    select_cost: float
    used: float
    size_limit_mb: float | None = None
    candidates: int = 0
    annealed: bool = False
    last: bool = False


@dataclass(frozen=True)
class ScoredRound:
    """What the last round's selection scored (post-processing of earlier releases; AIM
    Sec. 5's error bounds, :mod:`~pgm_dp.select.bounds`): ``model``, the estimate
    ``p̂_{T-1}`` the scores compared with, ``total``, the ``N`` its counts used,
    ``candidates``, ``{r: w_r}`` over the candidates ``C_T`` that passed the size limit, and
    ``noise_bias``, the ``E|noise|`` per cell the scores subtracted; ``records_per_person``,
    the ``K`` that multiplied the score's sensitivity."""

    model: Any
    total: float
    candidates: Mapping[Clique, float]
    noise_bias: float
    records_per_person: int = 1


@dataclass(frozen=True)
class AIMResult:
    """What :func:`aim` returns. ``cliques``: the marginals selected, in order (round 1
    on); ``release``: every measurement as one release (the one-way tables first; cliques
    measured twice merged, :func:`~.estimators.merged_release`), whose ``budget`` is the
    whole budget spent; ``rounds``: the budget log; ``model``: the estimator's final fit
    (``None`` if it returned none); ``notion``: ``"zcdp"`` or ``"pure"``, the unit of the
    costs in ``rounds``; ``total``: the ``ρ`` (zCDP; from ``(ε, δ)`` by the CKS bound) or
    ``ε`` (pure) they add up to; ``measurements``: the noisy tables one by one, in the
    order measured (repeated cliques kept apart; their rounds are in ``rounds``);
    ``last_scored``: what the last round's selection scored (:class:`ScoredRound`;
    ``None`` without rounds)."""

    cliques: tuple[Clique, ...]
    release: NoisyMarginals
    rounds: tuple[AIMRound, ...]
    model: Any
    budget: Budget
    notion: str
    total: float
    measurements: Measurements
    last_scored: ScoredRound | None = None


def _notion(budget: Budget) -> tuple[str, float]:
    """``("zcdp", ρ)`` or ``("pure", ε)``; ``(ε, δ)`` converts by the CKS bound."""
    require_budget(budget, Budget, f"budget must be PureDP, ZCDP or ApproxDP, got {budget!r}")
    return budget.notion, budget.amount


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise PrivacyParameterError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def model_marginals(model: Any, cliques: Sequence[Clique]) -> list[np.ndarray]:
    """Probability tables of ``cliques``: in one batch from a MarkovRandomField's junction
    tree, otherwise by ``model.marginal(q)`` one at a time."""
    from ..models.mrf import MarkovRandomField

    if isinstance(model, MarkovRandomField):
        return calibrated(model.junction_tree(), model.log_potentials).marginals(cliques)
    return [np.asarray(model.marginal(c), dtype=np.float64) for c in cliques]


def select_marginal(
    candidates: Mapping[Clique, float],
    answers: Mapping[Clique, np.ndarray],
    estimates: Mapping[Clique, np.ndarray],
    *,
    noise_bias: float,
    epsilon: float,
    notion: str = "zcdp",
    rng: RngLike = None,
    accountant: Accountant | None = None,
    what: str = "aim: select",
    records_per_person: int = 1,
) -> Clique:
    """AIM's selection step: the exponential mechanism with ``epsilon`` on
    ``q_r = w_r (||answers[r] - estimates[r]||_1 - noise_bias · n_r)``, sensitivity
    ``K max_r w_r`` (``w_r = candidates[r]``; counts, not frequencies; ``K`` the
    ``records_per_person``: ``K`` records move ``||answers[r] - estimates[r]||_1`` by at most
    ``K``). The accountant is
    charged ``ε² / 8`` zCDP (``notion="zcdp"``) or ``ε`` (``"pure"``) before the draw
    (``selection_cost`` of :func:`~pgm_dp.privacy.budget.notion_type`)."""
    keys = list(candidates)
    scores = np.array(
        [
            candidates[r] * (np.abs(answers[r] - estimates[r]).sum() - noise_bias * answers[r].size)
            for r in keys
        ]
    )
    sens = records_per_person * max(candidates[r] for r in keys)
    pure = PureDP(epsilon)
    unit = notion_type(notion)
    if not unit.is_pure:  # charged here; under pure DP the mechanism charges its own ε
        if check_accountant(accountant) is not None:
            accountant.charge(
                unit.selection_cost(epsilon),
                what=what,
                mechanism="exponential (bounded range)",
                scale=2 * sens / epsilon,
            )
        return keys[exponential_mechanism(scores, sensitivity=sens, budget=pure, rng=rng)]
    return keys[
        exponential_mechanism(
            scores, sensitivity=sens, budget=pure, rng=rng, accountant=accountant, what=what
        )
    ]


def should_anneal(before: np.ndarray, after: np.ndarray, noise_bias: float) -> bool:
    """AIM's annealing test: the estimate of the marginal just measured moved by at most
    the expected noise, ``||after - before||_1 <= noise_bias · n_r`` (counts)."""
    return bool(np.abs(np.asarray(after) - np.asarray(before)).sum() <= noise_bias * after.size)


@dataclass
class _State:
    """The loop's working state (not returned)."""

    setup: dict
    gen: np.random.Generator
    accountant: Accountant
    measurements: Measurements | None
    model: Any = None
    release: NoisyMarginals | None = None
    used: Fraction = Fraction(0)  # the exact sum of the costs charged (no rounding)
    scored: ScoredRound | None = None  # what the latest selection scored


def _measure(state: _State, cliques: list[Clique], cost: float, rnd: int) -> None:
    """Release ``cliques`` with a measurement cost each (one stacked release)."""
    s = state.setup
    k = len(cliques)
    budget = budget_of(s["notion"], cost * k)
    rel = release_marginals(
        s["codes"],
        cliques,
        s["domain"],
        budget=budget,
        mechanism=s["mechanism"],
        rng=state.gen,
        accountant=state.accountant,
        total="estimate",
        what=f"aim round {rnd}: measure",
        max_records_per_person=s["k"],
    )
    state.measurements = rel if state.measurements is None else state.measurements.append(rel)
    state.used += Fraction(cost * k)  # the float charged, exactly


def _estimate(state: _State, final: bool = False) -> None:
    s = state.setup
    state.release = merged_release(
        state.measurements,
        budget=s["budget"],
        mechanism=s["mechanism"],
        total=s["total"],
        sensitivity=s["k"],
    )
    state.model = call_estimator(s["estimator"], state.release, s["domain"], state.model, final)


def _counts(state: _State, cliques: Sequence[Clique]) -> dict[Clique, np.ndarray]:
    margs = model_marginals(state.model, cliques)
    return {c: m * state.release.total for c, m in zip(cliques, margs, strict=True)}


def _round(state: _State, t: int, costs: tuple[float, float]) -> tuple[AIMRound, tuple]:
    """One AIM round (module docstring, steps 2-4); the log entry and the next costs."""
    s, sched = state.setup, state.setup["schedule"]
    measure, select, last = sched.next(state.used, costs)
    planned = float(state.used) + measure + select
    limit = s["max_model_size"] * planned / sched.budget
    small = filter_candidates(s["candidates"], s["domain"], state.release.cliques, limit)
    bias = sched.expected_abs_noise(measure)
    eps = sched.selection_epsilon(select)
    state.scored = ScoredRound(state.model, state.release.total, small, bias, s["k"])
    estimates = _counts(state, list(small))
    clique = select_marginal(
        small,
        s["answers"],
        estimates,
        noise_bias=bias,
        epsilon=eps,
        notion=sched.notion,
        rng=state.gen,
        accountant=state.accountant,
        what=f"aim round {t}: select",
        records_per_person=s["k"],
    )
    state.used += Fraction(select)
    before = estimates[clique]  # the same model's table: no second calibration
    _measure(state, [clique], measure, t)
    _estimate(state)
    annealed = should_anneal(before, _counts(state, [clique])[clique], bias)
    entry = AIMRound(
        t,
        (clique,),
        sched.scale(measure),
        eps,
        measure,
        select,
        float(state.used),
        limit,
        len(small),
        annealed,
        last,
    )
    return entry, sched.anneal((measure, select)) if annealed else (measure, select)


def _validate(data, domain, budget, workload, accountant, options) -> dict:
    """Every check and every data-independent quantity, before anything is charged."""
    if not isinstance(domain, Domain):
        raise PrivacyParameterError(f"domain must be a Domain, got {type(domain).__name__}")
    notion, amount = _notion(budget)
    kinds = notion_type(notion).mechanisms
    mechanism = options["mechanism"] or kinds[0]
    if mechanism not in kinds:
        raise PrivacyParameterError(
            f"a {type(budget).__name__} budget measures with {kinds}, got mechanism={mechanism!r}"
        )
    size = options["max_model_size"]
    if isinstance(size, bool) or not isinstance(size, int | float) or not 0 < size < math.inf:
        raise PrivacyParameterError(f"max_model_size must be a positive number, got {size!r}")
    total = options["total"]
    if total is not None and (
        isinstance(total, bool) or not isinstance(total, int | float) or not 0 < total < math.inf
    ):
        raise PrivacyParameterError(f"a public total must be a positive number, got {total!r}")
    estimator = options["estimator"] or NaiveMLEEstimator()
    if not callable(estimator):
        raise PrivacyParameterError(f"estimator must be callable, got {estimator!r}")
    candidates = resolve_workload(domain, workload).candidates  # as it is when resolved
    one_way = [c for c in candidates if len(c) == 1]
    rounds = options["max_rounds"]
    per_variable = ROUNDS_PER_VARIABLE[notion]
    rounds = per_variable * len(domain) if rounds is None else _positive_int(rounds, "max_rounds")
    measured = options["measured"]
    if measured is not None and (
        not isinstance(measured, Measurements) or measured.domain != domain or not measured.cliques
    ):  # a measured table outside the workload is kept (fitted), never selected
        raise PrivacyParameterError("measured must be Measurements of marginals of the domain")
    if measured is None and rounds < len(one_way):
        raise PrivacyParameterError(
            f"max_rounds={rounds} is below the {len(one_way)} one-way marginals measured first"
        )
    check_accountant(accountant)
    k = check_records_per_person(options["max_records_per_person"])
    codes = domain.codes(data)  # DataValidationError before any charge; never read by label
    cost = budget_of(notion, amount)
    if accountant is not None:
        accountant.check(cost, what="aim")
    return dict(
        domain=domain,
        codes=codes,
        notion=notion,
        mechanism=mechanism,
        budget=budget,
        max_model_size=float(size),
        total=total,
        estimator=estimator,
        candidates=candidates,
        one_way=one_way,
        schedule=Schedule(notion, amount, rounds, k),
        cost=cost,
        measured=measured,
        k=k,
    )


def _first_round(state: _State, setup: dict, costs: tuple[float, float]) -> list[AIMRound]:
    """Round 0 of the log (Alg. 1, line 1): the tables ``measured`` before AIM ran, or the
    one-way marginals measured now with the first round's measurement cost (none when the
    workload has no one-way marginal)."""
    sched, measured, one_way = setup["schedule"], setup["measured"], setup["one_way"]
    if measured is not None:
        cliques = tuple(dict.fromkeys(measured.cliques))
        var = max(m.variance for m in measured.noise_models())
        return [AIMRound(0, cliques, sched.unit.scale_of_variance(var), None, 0.0, 0.0, 0.0)]
    if not one_way:
        return []
    _measure(state, one_way, costs[0], 0)
    used = float(state.used)
    return [AIMRound(0, tuple(one_way), sched.scale(costs[0]), None, used, 0.0, used)]


def _rounds(state: _State, costs: tuple[float, float], progress: bool) -> list[AIMRound]:
    """The selection rounds (Alg. 1, lines 3-14: :func:`_round`) until one takes all that
    was left of the budget, each reported (:func:`~pgm_dp._progress.step`: ``T`` planned
    rounds at most)."""
    sched = state.setup["schedule"]
    log, last, t = [], False, 0
    step("AIM round", 0, sched.rounds, "its rounds end when its budget is spent")
    with tqdm(total=None, desc="AIM", disable=not progress) as bar:
        while not last:
            t += 1
            entry, costs = _round(state, t, costs)
            log.append(entry)
            last = entry.last
            spent = f"{float(state.used) / sched.budget:.0%} of the budget"
            bar.update(1)
            bar.set_postfix_str(spent)
            step("AIM round", t, t if last else max(sched.rounds, t + 1), f"{spent} spent")
    return log


def aim(
    data: Any,
    domain: Domain,
    budget: Budget,
    workload: Any = None,
    *,
    rng: RngLike = None,
    accountant: Accountant | None = None,
    max_model_size: float = 80,
    max_rounds: int | None = None,
    estimator: Callable | None = None,
    mechanism: str | None = None,
    total: float | None = None,
    progress: bool = False,
    measured: Measurements | None = None,
    max_records_per_person: int = 1,
) -> AIMResult:
    """Run AIM (module docstring) on ``data`` over the public ``domain``.

    ``budget``: ``ZCDP(ρ)`` (the paper's notion); ``ApproxDP(ε, δ)`` runs at the largest
    ``ρ`` whose CKS conversion fits (:func:`~pgm_dp.privacy.zcdp_rho_within`); ``PureDP(ε)``
    (or ``δ = 0``) runs the pure-DP variant (:mod:`.schedule`): zCDP implies no pure-DP
    guarantee, so a pure budget is never converted. ``workload``: see
    :func:`~.workload.workload_cliques` (default all 2-way marginals, ``"3way"``, or
    weighted cliques), or a :class:`~.workload.Workload` already resolved on ``domain``
    (:func:`~.workload.resolve_workload`), taken as it is. ``max_model_size``: megabytes
    of junction-tree tables (80 in the paper's comparisons; capped by the model's largest
    table, module doc); ``max_rounds``: ``T`` (default ``16 d``; ``2 d`` in the pure
    variant); ``estimator``: see
    :mod:`.estimators` (default :class:`~.estimators.NaiveMLEEstimator`); ``mechanism``:
    ``"discrete_gaussian"`` (default) or ``"gaussian"`` for zCDP, ``"discrete_laplace"``
    (default) or ``"laplace"`` for pure DP; ``total``: a public number of records (default:
    estimated from the noisy tables); ``max_records_per_person``: ``K``, the most records of
    one person in ``data`` (bounded by the caller; module docstring). ``accountant`` is
    checked for the whole budget before the data are read and charged before every draw;
    the whole budget is spent. Bad input raises a ``ValueError`` subclass before anything is
    charged. ``rng``: leave ``None`` for a real release; a seed makes it reproducible (tests,
    experiments).
    """
    setup = _validate(
        data,
        domain,
        budget,
        workload,
        accountant,
        dict(
            mechanism=mechanism,
            max_model_size=max_model_size,
            total=total,
            estimator=estimator,
            max_rounds=max_rounds,
            measured=measured,
            max_records_per_person=max_records_per_person,
        ),
    )
    codes, sched = setup["codes"].array, setup["schedule"]
    setup["answers"] = {
        c: contingency_table(codes, [domain.index(v) for v in c], domain.sizes(c)).astype(float)
        for c in setup["candidates"]
    }
    acc = accountant if accountant is not None else Accountant(setup["cost"])
    state = _State(setup, as_generator(rng), acc, setup["measured"])
    costs = sched.initial()
    log = _first_round(state, setup, costs)
    _estimate(state)
    log += _rounds(state, costs, progress)
    _estimate(state, final=True)
    return AIMResult(
        cliques=tuple(e.cliques[0] for e in log if e.round > 0),
        release=state.release,
        rounds=tuple(log),
        model=state.model,
        budget=budget,
        notion=setup["notion"],
        total=sched.budget,
        measurements=state.measurements,
        last_scored=state.scored,
    )
