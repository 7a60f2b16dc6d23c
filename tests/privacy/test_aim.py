"""AIM (McKenna, Mullins, Sheldon & Miklau 2022): budget annealing, selection, filter, refusals.

Most runs use a cheap independent-model estimator (:class:`OneWay`) so that the budget
tests do not fit an MRF each round; one test runs the default naive-MLE estimator.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from pgm_dp import Domain, MarkovRandomField
from pgm_dp.errors import (
    BudgetExceededError,
    DataValidationError,
    DomainError,
    ModelTooLargeError,
    PrivacyParameterError,
)
from pgm_dp.learners import NaiveMLE
from pgm_dp.privacy import ZCDP, Accountant, ApproxDP, Measurements, NoiseModel, PureDP
from pgm_dp.privacy.audit import audit_categorical
from pgm_dp.select import (
    LearnerEstimator,
    Schedule,
    aim,
    candidate_weights,
    filter_candidates,
    junction_tree_cliques,
    merged_release,
    model_size_mb,
    resolve_workload,
    select_marginal,
    should_anneal,
    workload_cliques,
)

DOM = Domain(["A", "B", "C"], [2, 2, 3])
HUGE = Domain(["A", "B"], [2**20, 2**20])


def make_data(n: int = 400, seed: int = 0) -> pd.DataFrame:
    g = np.random.default_rng(seed)
    a = g.integers(0, 2, n)
    b = np.where(g.random(n) < 0.8, a, 1 - a)
    c = (b + g.integers(0, 2, n)) % 3
    return pd.DataFrame({"A": a, "B": b, "C": c})


class OneWay:
    """Independent model from the released one-way tables (fast; no fitting)."""

    def __call__(self, release, cliques, domain):
        pots = {}
        for (v,) in [c for c in release.cliques if len(c) == 1]:
            p = np.clip(np.asarray(release.noisy[(v,)], dtype=float), 1e-3, None)
            pots[(v,)] = np.log(p / p.sum())
        return MarkovRandomField(domain, list(pots), pots)


def run(budget, *, acc=None, seed=0, **kw):
    kw.setdefault("estimator", OneWay())
    return aim(make_data(), DOM, budget, rng=seed, accountant=acc, **kw)


# -- the paper's formulas ---------------------------------------------------------------


def test_schedule_matches_the_papers_formulas():
    rho, t = 0.48, 48  # 0.9 rho / T = 0.009, 0.1 rho / T = 0.001
    s = Schedule("zcdp", rho, t)
    meas, sel = s.initial()
    assert meas == pytest.approx(0.009, rel=1e-12) and sel == pytest.approx(0.001, rel=1e-12)
    assert s.scale(meas) == pytest.approx(math.sqrt(t / (2 * 0.9 * rho)), rel=1e-12)
    assert s.selection_epsilon(sel) == pytest.approx(math.sqrt(8 * 0.1 * rho / t), rel=1e-12)
    assert s.expected_abs_noise(meas) == pytest.approx(math.sqrt(2 / math.pi) * 7.453559925)
    # annealing: sigma / 2 and 2 epsilon, both costs times 4
    m2, s2 = s.anneal((meas, sel))
    assert s.scale(m2) == pytest.approx(s.scale(meas) / 2, rel=1e-12)
    assert s.selection_epsilon(s2) == pytest.approx(2 * s.selection_epsilon(sel), rel=1e-12)
    # the last round: less than twice a round's cost left -> all of it, split 0.9 / 0.1
    assert s.next(rho - 0.0199, (meas, sel))[2] and not s.next(rho - 0.0201, (meas, sel))[2]
    m, e, last = s.next(rho - 0.015, (meas, sel))
    assert last and s.scale(m) == pytest.approx(math.sqrt(1 / (2 * 0.9 * 0.015)), rel=1e-9)
    assert s.selection_epsilon(e) == pytest.approx(math.sqrt(8 * 0.1 * 0.015), rel=1e-9)
    p = Schedule("pure", 1.0, 10)  # pure variant: b = T / (0.9 eps), eps_sel = 0.1 eps / T
    pm, ps = p.initial()
    assert p.scale(pm) == pytest.approx(10 / 0.9) and p.selection_epsilon(ps) == pytest.approx(0.01)
    assert p.anneal((pm, ps)) == pytest.approx((2 * pm, 2 * ps))


def test_run_follows_the_schedule_and_spends_exactly_the_budget():
    rho = 0.48
    acc = Accountant(ZCDP(rho))
    res = run(ZCDP(rho), acc=acc)
    t = 16 * len(DOM)
    s = Schedule("zcdp", rho, t)
    zero = res.rounds[0]
    assert zero.cliques == (("A",), ("B",), ("C",))
    assert zero.scale == pytest.approx(math.sqrt(t / (2 * 0.9 * rho)), rel=1e-12)  # 7.4536
    assert zero.measure_cost == pytest.approx(3 * 0.009, rel=1e-12)
    for m in res.measurements.noise_models()[:3]:  # the discrete Gaussian's rational sigma^2
        assert zero.scale <= m.scale <= zero.scale * (1 + 1e-6)  # >= 1 / (2 rho)
    costs = s.initial()
    used = zero.measure_cost
    for r in res.rounds[1:]:
        meas, sel, last = s.next(used, costs)
        assert (r.measure_cost, r.select_cost, r.last) == (
            pytest.approx(meas, rel=1e-12), pytest.approx(sel, rel=1e-12), last,
        )  # fmt: skip
        assert r.scale == pytest.approx(s.scale(meas)) and r.selection_epsilon == pytest.approx(
            s.selection_epsilon(sel)
        )
        used += meas + sel
        assert r.used == pytest.approx(used, rel=1e-12)
        costs = s.anneal((meas, sel)) if r.annealed else (meas, sel)
    assert res.rounds[-1].last and not any(r.last for r in res.rounds[:-1])
    # the accountant: never above, everything spent; one charge per measurement / selection
    assert acc.spent.rho == pytest.approx(rho, rel=1e-12) and acc.spent.rho <= rho * (1 + 1e-12)
    assert math.fsum(r.measure_cost + r.select_cost for r in res.rounds) == pytest.approx(rho)
    assert res.total == rho
    assert len(acc.charges) == 1 + 2 * (len(res.rounds) - 1)
    assert res.release.budget == ZCDP(rho)


@pytest.mark.parametrize(
    "budget", [ApproxDP(1.0, 1e-6), PureDP(1.0), ZCDP(0.1)], ids=["approx", "pure", "zcdp"]
)
def test_accountant_total_equals_the_budget(budget):
    acc = Accountant(budget)
    res = run(budget, acc=acc)
    spent = acc.spent
    if isinstance(budget, ZCDP):
        assert spent.rho == pytest.approx(budget.rho, rel=1e-12)
    else:
        assert spent.epsilon == pytest.approx(budget.epsilon, rel=1e-9)
        assert spent.epsilon <= budget.epsilon * (1 + 1e-12)
    kinds = {"pure": "discrete_laplace", "zcdp": "discrete_gaussian"}
    assert res.release.mechanism == kinds[res.notion]
    assert res.notion == ("pure" if isinstance(budget, PureDP) else "zcdp")


def test_pure_variant_uses_laplace_and_pure_selection_costs():
    acc = Accountant(PureDP(2.0))
    res = run(PureDP(2.0), acc=acc)
    assert all(isinstance(c.cost, PureDP) for c in acc.charges)
    b0 = 2 * 3 / (0.9 * 2.0)  # T = 2 d by default in the pure variant
    assert res.rounds[0].scale == pytest.approx(b0)
    noise = res.measurements.noise_models()[0]  # the exact sampler's rational scale >= b0
    assert noise.kind == "discrete_laplace" and b0 <= noise.scale <= b0 * (1 + 1e-6)
    assert res.rounds[1].selection_epsilon == pytest.approx(0.1 * 2.0 / 6)


# -- selection, annealing, filter --------------------------------------------------------


def test_workload_weights_and_candidates():
    dom = Domain(list("ABCD"), [2, 3, 4, 5])
    w = candidate_weights(workload_cliques(dom))
    assert len(w) == 4 + 6
    assert all(w[c] == (3.0 if len(c) == 1 else 6.0) for c in w)  # d - 1 and 2d - 2
    wl = workload_cliques(dom, [(("B", "A"), 2.0), ("C", "D")])
    assert wl == ((("A", "B"), 2.0), (("C", "D"), 1.0))
    assert candidate_weights(wl)[("A",)] == 2.0
    big = Domain(list("ABC"), [100, 100, 2])
    with pytest.raises(DomainError):
        workload_cliques(big, "3way")  # 20,000 cells > the reference's 10,000
    assert workload_cliques(big, "3way", max_cells=10**5)[0][0] == ("A", "B", "C")


def test_a_resolved_workload_is_taken_as_it_is():
    """AIM run on a workload resolved once gives what the same workload as a list gives; a
    workload resolved on another domain, or whose candidates are too large, is refused."""
    asked = [("A", "B"), (("B", "C"), 2.0)]
    resolved = resolve_workload(DOM, asked)
    assert resolved.cliques == workload_cliques(DOM, asked)
    assert dict(resolved.candidates) == candidate_weights(workload_cliques(DOM, asked))
    assert resolved.cells == (4, 6) and workload_cliques(DOM, resolved) == resolved.cliques
    assert resolve_workload(DOM, resolved) is resolved
    data = make_data(300)
    runs = [aim(data, DOM, ZCDP(0.5), w, rng=4, max_rounds=4) for w in (asked, resolved)]
    assert runs[0].cliques == runs[1].cliques
    assert runs[0].release.noisy.keys() == runs[1].release.noisy.keys()
    for c in runs[0].release.noisy:
        np.testing.assert_array_equal(runs[0].release.noisy[c], runs[1].release.noisy[c])
    with pytest.raises(DomainError):
        resolve_workload(Domain(["A", "B", "C"], [2, 2, 4]), resolved)
    with pytest.raises(ModelTooLargeError):
        resolve_workload(HUGE, [("A", "B")])


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_selection_step_is_private_by_an_audit():
    """D and D' differ by one record (in cell 0 of every table); the model's estimates are
    fixed (earlier noisy measurements, conditioned on). The record lifts candidate 0's
    score by its weight and lowers the others', the worst case of the ratio. 3,000 draws
    a side; the false-alarm rate of the audit is alpha = 1e-3."""
    eps = 2.0
    cands = {("A",): 1.0, ("B",): 1.0, ("C",): 1.0}
    est = {c: np.array([50.0, 50.0]) for c in cands}
    ans_b = {("A",): np.array([60.0, 40.0]), ("B",): np.array([40.0, 60.0])}
    ans_b[("C",)] = np.array([40.0, 60.0])
    ans_a = {c: v + np.array([1.0, 0.0]) for c, v in ans_b.items()}  # D = D' + one record
    gen = np.random.default_rng(7)
    keys = list(cands)

    def draws(answers):
        return [
            keys.index(select_marginal(cands, answers, est, noise_bias=0.0, epsilon=eps, rng=gen))
            for _ in range(3000)
        ]

    res = audit_categorical(draws(ans_a), draws(ans_b), categories=[0, 1, 2], alpha=1e-3)
    assert res.consistent_with(eps), res
    # the audit has power: a record counted 4 times (sensitivity understated 4-fold)
    heavy = {c: v + np.array([4.0, 0.0]) for c, v in ans_b.items()}
    broken = audit_categorical(draws(heavy), draws(ans_b), categories=[0, 1, 2], alpha=1e-3)
    assert not broken.consistent_with(eps), broken


def test_pure_default_triples_keep_the_selection_sensitivity_between_neighbours():
    """Under pure epsilon the default workload of a small domain is every triple
    (pgm_dp.select.plan.default_workload); removing one record moves every candidate's score
    ``w_r (||M_r(D) - est_r||_1 - bias n_r)`` by at most ``w_r <= max_r w_r``, the
    sensitivity select_marginal uses: the estimates are fixed (earlier releases)."""
    from pgm_dp.select.plan import default_workload
    from pgm_dp.tables import contingency_table

    dom = Domain(["A", "B", "C", "D"], [2, 3, 2, 4])
    cands = candidate_weights(workload_cliques(dom, "3way"))
    assert default_workload(dom, "pure").candidates == cands
    sens = max(cands.values())
    g = np.random.default_rng(3)
    codes = np.column_stack([g.integers(0, k, 60) for k in dom.shape])
    est = {r: g.uniform(0, 20, dom.sizes(r)) for r in cands}

    def scores(x):
        tabs = {r: contingency_table(x, [dom.index(v) for v in r], dom.sizes(r)) for r in cands}
        return np.array([w * (np.abs(tabs[r] - est[r]).sum() - 0.5 * tabs[r].size)
                         for r, w in cands.items()])  # fmt: skip

    full = scores(codes)
    for i in range(len(codes)):  # add/remove-one neighbours
        assert np.max(np.abs(scores(np.delete(codes, i, axis=0)) - full)) <= sens + 1e-9


def test_selection_charges_before_drawing():
    acc = Accountant(ZCDP(1e-3))
    cands = {("A",): 2.0}
    with pytest.raises(BudgetExceededError):  # eps^2/8 = 0.0125 > 1e-3
        select_marginal(cands, {("A",): np.ones(2)}, {("A",): np.ones(2)},
                        noise_bias=0.0, epsilon=1.0, rng=0, accountant=acc)  # fmt: skip
    assert acc.charges == ()
    acc = Accountant(ZCDP(1.0))
    select_marginal(cands, {("A",): np.ones(2)}, {("A",): np.ones(2)},
                    noise_bias=0.0, epsilon=1.0, rng=0, accountant=acc)  # fmt: skip
    assert acc.spent.rho == pytest.approx(1 / 8)


def test_annealing_rule():
    bias = 0.5
    before = np.zeros(4)
    assert should_anneal(before, np.array([0.5, -0.5, 0.5, 0.5]), bias)  # L1 = 2 = bias * n
    assert not should_anneal(before, np.array([0.5, -0.5, 0.5, 0.6]), bias)
    # in a run, an annealed round multiplies both costs of the next one by 4 (zCDP)
    res = run(ZCDP(0.48), seed=3)
    pairs = zip(res.rounds[1:-1], res.rounds[2:], strict=True)
    seen = 0
    for r, nxt in pairs:
        if r.annealed and not nxt.last:
            seen += 1
            assert nxt.measure_cost == pytest.approx(4 * r.measure_cost, rel=1e-12)
            assert nxt.select_cost == pytest.approx(4 * r.select_cost, rel=1e-12)
    assert seen > 0  # the one-way estimator never moves: every pair round anneals


def test_model_size_filter():
    dom = Domain(list("ABCD"), [64, 64, 64, 2])
    cands = candidate_weights(workload_cliques(dom, max_cells=10**5))
    measured = [("A", "B")]
    base = model_size_mb(dom, measured)  # (A, B) and the singletons C, D
    assert base == pytest.approx((64 * 64 + 64 + 2) * 8 / 2**20)
    limit = model_size_mb(dom, [*measured, ("C", "D")])
    kept = filter_candidates(cands, dom, measured, limit)
    assert ("C", "D") in kept and ("A", "C") not in kept and ("B", "C") not in kept
    assert ("A", "B") in kept and ("A",) in kept  # inside the current tree: free
    assert set(filter_candidates(cands, dom, measured, 0.0)) == {
        ("A",), ("B",), ("C",), ("D",), ("A", "B"),
    }  # fmt: skip


def test_every_selection_passed_the_filter():
    dom = Domain(list("ABCD"), [8, 8, 8, 2])
    g = np.random.default_rng(1)
    data = pd.DataFrame({v: g.integers(0, k, 300) for v, k in zip(dom, dom.shape, strict=True)})
    res = aim(data, dom, ZCDP(1.0), rng=0, estimator=OneWay(), max_model_size=0.02)
    measured = list(res.rounds[0].cliques)
    for r in res.rounds[1:]:
        c = r.cliques[0]
        free = any(set(c) <= s for s in junction_tree_cliques(dom, measured))
        assert free or model_size_mb(dom, [*measured, c]) <= r.size_limit_mb
        assert r.size_limit_mb == pytest.approx(0.02 * r.used / 1.0)
        measured.append(c)


def test_a_large_max_model_size_never_selects_a_clique_the_model_refuses():
    """Three 512-state copies of one variable: any two pairs fit, all three make the
    triangle ``ABC`` of 2^27 cells, above the model's largest table (2^26), though within
    a max_model_size of 10^4 MB. The filter leaves the third pair out, so AIM spends the
    whole budget; before, seed 2 selected it and the model refused it after 121 of the 200
    charged."""
    dom = Domain(list("ABC"), [512, 512, 512])
    x = np.random.default_rng(0).integers(0, 512, 20_000)
    data = pd.DataFrame({v: x for v in dom.attributes})
    pairs = [("A", "B"), ("B", "C"), ("A", "C")]
    cands = candidate_weights(workload_cliques(dom, pairs))
    assert ("A", "C") not in filter_candidates(cands, dom, pairs[:2], 1e4)
    assert ("A", "C") in filter_candidates(cands, dom, pairs[:2], 1e4, max_cells=2**27)
    acc = Accountant(PureDP(200.0))

    def uniform(release, cliques, domain):
        return MarkovRandomField(domain, cliques)

    kw = dict(estimator=uniform, max_rounds=16, max_model_size=1e4)
    res = aim(data, dom, PureDP(200.0), pairs, rng=2, accountant=acc, **kw)
    assert acc.spent.epsilon == pytest.approx(200.0)
    assert len({frozenset(c) for c in res.cliques}) == 2


# -- refusals, reproducibility, release ---------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, err",
    [
        (dict(workload=[("A", "Z")]), DomainError),
        (dict(workload=[(("A", "B"), -1.0)]), DomainError),
        (dict(workload=[(("A", "B"), 0.0)]), DomainError),
        (dict(workload="4way"), DomainError),
        (dict(mechanism="laplace"), PrivacyParameterError),
        (dict(max_model_size=0), PrivacyParameterError),
        (dict(max_rounds=2), PrivacyParameterError),  # below the 3 one-way marginals
        (dict(max_rounds=True), PrivacyParameterError),
        (dict(total=-5.0), PrivacyParameterError),
        (dict(estimator="naive"), PrivacyParameterError),
        (dict(budget=PureDP(1.0), mechanism="gaussian"), PrivacyParameterError),
        (dict(data=pd.DataFrame({"A": [0, 5], "B": [0, 1], "C": [0, 1]})), DataValidationError),
        (
            dict(domain=Domain(["A", "B"], [2**20, 2**20]), workload=[("A", "B")]),
            ModelTooLargeError,
        ),
        (dict(small_accountant=True), BudgetExceededError),
    ],
)
def test_bad_input_refused_before_any_charge(kwargs, err):
    acc = Accountant(ZCDP(0.01 if kwargs.pop("small_accountant", False) else 1.0))
    data = kwargs.pop("data", make_data())
    dom = kwargs.pop("domain", DOM)
    budget = kwargs.pop("budget", ZCDP(0.5))
    if budget != ZCDP(0.5):
        acc = Accountant(budget)
    if dom is not DOM:
        data = np.zeros((2, 2), dtype=int)
    with pytest.raises(err):
        aim(data, dom, budget, rng=0, accountant=acc, **kwargs)
    assert acc.charges == ()
    with pytest.raises(PrivacyParameterError):
        aim(make_data(), DOM, ZCDP(0.5), accountant="acc")


def test_reproducible_with_a_seed():
    a, b = run(ZCDP(0.3), seed=11), run(ZCDP(0.3), seed=11)
    assert a.cliques == b.cliques and a.release == b.release
    assert [r.annealed for r in a.rounds] == [r.annealed for r in b.rounds]


def test_release_merges_repeats_and_never_holds_the_true_total():
    m = Measurements.from_tables(
        DOM,
        (("A",), ("A",), ("A", "B")),
        [np.array([10, 20]), np.array([13, 26]), np.array([[5, 5], [10, 10]])],
        [NoiseModel("gaussian", s) for s in (1.0, 2.0, 1.0)],
        budget=ZCDP(1.0),
        mechanism="gaussian",
        sensitivity=1.0,
        total=1.0,
        total_source="estimate",
    )
    rel = merged_release(m, budget=ZCDP(1.0), mechanism="gaussian")
    assert rel.cliques == (("A",), ("A", "B"))
    assert np.allclose(rel.noisy[("A",)], [(10 + 13 / 4) / 1.25, (20 + 26 / 4) / 1.25])
    assert rel.noise[("A",)] == NoiseModel("gaussian", math.sqrt(1 / 1.25))
    # N: inverse-variance mean of the sums 30 (var 2), 39 (var 8), 30 (var 4)
    assert rel.total == pytest.approx((30 / 2 + 39 / 8 + 30 / 4) / (1 / 2 + 1 / 8 + 1 / 4))
    assert rel.total_source == "estimate"
    res = run(ZCDP(0.3))
    assert res.release.total_source == "estimate" and res.release.total != 400
    # AIM's own record: every measurement in the order measured, repeats kept apart
    assert isinstance(res.measurements, Measurements)
    assert res.measurements.cliques == tuple(c for r in res.rounds for c in r.cliques)
    assert res.release == merged_release(
        res.measurements, budget=ZCDP(0.3), mechanism=res.release.mechanism
    )
    assert run(ZCDP(0.3), total=400).release.total_source == "given"


def test_default_estimator_and_a_plugged_learner():
    acc = Accountant(ZCDP(1.0))
    res = aim(make_data(), DOM, ZCDP(1.0), rng=0, accountant=acc, max_rounds=4)
    assert isinstance(res.model, MarkovRandomField)
    assert set(res.model.cliques) == set(res.release.cliques)
    assert acc.spent.rho == pytest.approx(1.0, rel=1e-12)
    est = LearnerEstimator(NaiveMLE())
    res2 = aim(make_data(), DOM, ZCDP(1.0), rng=0, max_rounds=3, estimator=est)
    assert set(res2.model.cliques) == set(res2.release.cliques)


def test_numpy_mle_matches_the_package_solver():
    from pgm_dp.inference.queries import calibrate_tables
    from pgm_dp.learners.mle import fit_marginals
    from pgm_dp.select.mle import fit_tables

    dom = Domain(list("ABCD"), [2, 3, 2, 3])
    cl = (("A",), ("A", "B"), ("B", "C"), ("C", "D"), ("A", "D"))
    g = np.random.default_rng(4)
    targets = [g.dirichlet(np.ones(dom.size(c))).reshape(dom.sizes(c)) for c in cl]  # clashing
    mrf = MarkovRandomField(dom, cl)
    ref = fit_marginals(mrf, dict(zip(cl, targets, strict=True)), l2=1e-3, tol=1e-7).model
    for conditioned in (True, False):  # the gauge changes the tables, not the distribution
        tables, info = fit_tables(dom, cl, targets, l2=1e-3, tol=1e-7, conditioned=conditioned)
        assert info["converged"]
        fitted = mrf.replace(tables)
        queries = [*cl, ("B", "D")]
        got, want = fitted.marginals(queries), ref.marginals(queries)
        assert all(np.allclose(got[q], want[q], atol=1e-6) for q in queries)
        _, log_z = calibrate_tables(mrf.junction_tree(), tables)
        assert log_z == pytest.approx(float(fitted.log_partition()), abs=1e-10)


def test_a_workload_on_some_variables_measures_only_those():
    res = run(ZCDP(0.5), workload=[("A", "B")])
    assert res.rounds[0].cliques == (("A",), ("B",))
    assert all(set(c) <= {"A", "B"} for c in res.release.cliques)
    assert res.model.marginal(("C",)).shape == (3,)
