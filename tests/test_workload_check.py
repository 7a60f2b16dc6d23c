"""The held-out check of a table fit against the private independent model on the workload
(:mod:`pgm_dp.table.check`): it sees a model worse than the independent one, says so and
falls back; its share is charged once, through the mechanism layer, within the budget."""

import warnings

import numpy as np
import pandas as pd
import pytest

from pgm_dp import learners
from pgm_dp.domain import Domain
from pgm_dp.models import MarkovRandomField
from pgm_dp.privacy import ZCDP, Accountant, ApproxDP, PureDP
from pgm_dp.select import workload_cliques
from pgm_dp.table.check import CHECK_SHARE, independent_model, workload_gap
from pgm_dp.table.fit import expand_model, fit_table
from pgm_dp.table.report import WorseThanIndependentWarning, format_report

STATES = [f"s{j}" for j in range(5)]


def _independent_table(n: int = 6000, d: int = 4, seed: int = 0):
    """Independent columns: the independent model is the right one; pairs fit noise."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({f"c{i}": rng.choice(STATES, n) for i in range(d)})
    return df, {c: STATES for c in df}


def _copied_table(n: int, seed: int = 1):
    """``b`` copies ``a``; ``c`` is independent: the pair (a, b) is worth measuring."""
    rng = np.random.default_rng(seed)
    a = rng.choice(STATES, n)
    df = pd.DataFrame({"a": a, "b": a, "c": rng.choice(STATES, n)})
    return df, {c: STATES for c in df}


def test_a_fit_worse_than_independent_is_reported_and_replaced():
    df, spec = _independent_table()
    with pytest.warns(WorseThanIndependentWarning, match="worse on the workload"):
        tf = fit_table(df, spec, budget=PureDP(0.2), rng=2, compress=False, check_share=0.3,
                       max_rounds=6)  # fmt: skip
    check = tf.report["workload_check"]
    assert check["worse_than_independent"] and check["fallback"] and check["gap"] > 0
    assert "WORSE than the private independent model" in format_report(tf.report)
    assert "independent model was returned" in format_report(tf.report)
    # the case is real: refitted from the same release, the model is worse on the workload
    dom = tf.plan.domain
    mrf = MarkovRandomField(dom, tf.release.cliques)
    fitted = learners.get("naive").make().fit(tf.release, mrf)
    independent = independent_model(tf.release)
    gap, _ = workload_gap(tf.plan.encode(df), dom, workload_cliques(dom), fitted.model,
                          independent, tf.release.total)  # fmt: skip
    assert gap > 0
    # and what is returned is the independent model, expanded like any fit
    want = expand_model(independent, tf.plan).marginals([("c0",), ("c1", "c2")])
    got = tf.fit.model.marginals([("c0",), ("c1", "c2")])
    for k in want:
        np.testing.assert_allclose(got[k], want[k], atol=1e-9)


def test_a_good_fit_keeps_its_model_and_says_no_worse():
    df, spec = _copied_table(6000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", WorseThanIndependentWarning)
        tf = fit_table(df, spec, budget=PureDP(2.0), rng=0, compress=False, max_rounds=3)
    check = tf.report["workload_check"]
    assert not check["worse_than_independent"] and not check["fallback"]
    assert "no worse than the private independent model" in format_report(tf.report)


@pytest.mark.parametrize("budget", [PureDP(2.0), ApproxDP(2.0, 1e-6)])
def test_the_held_out_share_is_one_charge_within_the_budget(budget):
    df, spec = _copied_table(6000, seed=4)
    acc = Accountant(budget.native())
    tf = fit_table(df, spec, budget=budget, rng=0, accountant=acc, compress=False, max_rounds=3)
    checks = [c for c in acc.charges if c.what.startswith("fit check")]
    assert len(checks) == 1 and checks[0] is acc.charges[-1]  # after the model is fitted
    native = budget.native()
    assert checks[0].cost.amount == pytest.approx(CHECK_SHARE * native.amount, rel=1e-12)
    assert checks[0].cost.amount <= CHECK_SHARE * native.amount
    assert acc.spent.amount == pytest.approx(native.amount) and acc.spent.amount <= native.amount
    assert isinstance(acc.spent, PureDP if budget.is_pure else ZCDP)
    check = tf.report["workload_check"]
    # the noise on the mean-TVD gap: 1/(N eps) (Laplace) or 1/(N sqrt(2 rho)), lattice-rounded
    c = checks[0].cost.amount
    ideal = 1 / (tf.release.total * (c if budget.is_pure else np.sqrt(2 * c)))
    assert ideal <= check["noise_scale"] <= 1.05 * ideal
    steps = [s["step"] for s in tf.report["steps"]]
    assert any(s.startswith("fit check") for s in steps)
    off = Accountant(budget.native())
    tf = fit_table(df, spec, budget=budget, rng=0, accountant=off, compress=False, max_rounds=3,
                   check_share=0)  # fmt: skip
    assert "workload_check" not in tf.report
    assert not any(c.what.startswith("fit check") for c in off.charges)


def test_the_gap_moves_by_at_most_its_sensitivity_between_neighbours():
    rng = np.random.default_rng(5)
    dom = Domain(["a", "b", "c"], [3, 4, 2])
    codes = np.column_stack([rng.integers(0, k, 50) for k in dom.shape])
    wl = (((("a", "b"), 1.0)), (("b", "c"), 2.5), (("a", "b", "c"), 0.5))
    cliques = [("a", "b"), ("b", "c")]
    q = MarkovRandomField(dom, cliques, [rng.normal(size=dom.sizes(c)) for c in cliques])
    r = MarkovRandomField(dom, cliques, [rng.normal(size=dom.sizes(c)) for c in cliques])
    full, sens = workload_gap(codes, dom, wl, q, r, 50.0)
    assert sens == pytest.approx(2 * 4.0)
    for i in range(len(codes)):  # remove one record (add/remove-one neighbours)
        gap, _ = workload_gap(np.delete(codes, i, axis=0), dom, wl, q, r, 50.0)
        assert abs(gap - full) <= sens + 1e-9


@pytest.mark.parametrize("options", [{"check_share": 0.6}, {"check_share": -0.1},
                                     {"check_share": 0.3, "prepare_share": 0.75}])  # fmt: skip
def test_bad_check_shares_are_refused_before_anything_is_spent(options):
    df, spec = _independent_table(300, 3)
    acc = Accountant(PureDP(1.0))
    with pytest.raises(ValueError, match="share"):
        fit_table(df, spec, budget=PureDP(1.0), accountant=acc, **options)
    assert acc.charges == ()


def test_a_check_too_noisy_to_say_anything_is_not_run():
    df, spec = _copied_table(1000, seed=6)  # 1 / (1000 * 0.02) = 0.05 > MAX_CHECK_NOISE
    acc = Accountant(PureDP(1.0))
    tf = fit_table(df, spec, budget=PureDP(1.0), rng=0, accountant=acc, compress=False,
                   max_rounds=3)  # fmt: skip
    assert "workload_check" not in tf.report
    assert any("workload check was not run" in n for n in tf.report["notes"])
    assert not any(c.what.startswith("fit check") for c in acc.charges)
    assert acc.spent.epsilon <= 1.0 - CHECK_SHARE + 1e-12  # the share is left unspent


def _all_codes(domain) -> np.ndarray:
    grids = np.meshgrid(*[np.arange(k) for k in domain.shape], indexing="ij")
    return np.stack(grids, -1).reshape(-1, len(domain.shape))


def test_the_floored_model_is_the_mixture_on_every_junction_tree_clique_and_has_no_zero():
    from pgm_dp.select.aim import model_marginals
    from pgm_dp.table.check import floor_weight, floored_model

    df, spec = _copied_table(3000)
    tf = fit_table(df, spec, budget=PureDP(1.0), rng=0, compress=False, max_rounds=3,
                   check_share=0)  # fmt: skip
    rel = tf.release
    mrf = MarkovRandomField(rel.domain, rel.cliques)
    fitted = learners.get("naive").make().fit(rel, mrf).model  # b copies a: zeros off the diagonal
    floored, lam = floored_model(fitted, rel), floor_weight(rel)
    ind = independent_model(rel)
    for clique in fitted.junction_tree().cliques:
        (q,), (r,) = model_marginals(fitted, [clique]), model_marginals(ind, [clique])
        np.testing.assert_allclose(model_marginals(floored, [clique])[0], (1 - lam) * q + lam * r,
                                   atol=1e-12)  # fmt: skip
    codes = _all_codes(rel.domain)
    logp, logq, logr = floored.log_prob(codes), fitted.log_prob(codes), ind.log_prob(codes)
    assert np.isclose(np.exp(logp).sum(), 1.0)  # a distribution: every cell summed by brute force
    seen = logr > -20  # the states with records ("<missing>" has none)
    assert logp[seen].min() > logq[seen].min() + 5  # the off-diagonal cells are lifted
    assert np.all(logp >= np.log(lam) + logr - np.log(2))  # a floor under every cell


def test_the_floor_weight_is_one_noisy_cells_expected_count_over_n():
    from pgm_dp.table.check import expected_abs_noise, floor_weight

    df, spec = _copied_table(3000)
    tf = fit_table(df, spec, budget=PureDP(1.0), rng=0, compress=False, max_rounds=3,
                   check_share=0)  # fmt: skip
    rel = tf.release
    a = max(expected_abs_noise(rel.noise[c]) for c in rel.cliques)
    assert all(rel.noise[c].is_laplace for c in rel.cliques)
    assert a == pytest.approx(max(np.sqrt(rel.noise[c].variance / 2) for c in rel.cliques))
    assert floor_weight(rel) == pytest.approx(a / (rel.total + a))


def test_free_parameters_count_the_subsets_of_the_cliques_once():
    from pgm_dp.table.report import free_parameters

    dom = Domain(list("abc"), [3, 4, 2])
    assert free_parameters(dom, [("a",), ("b",), ("c",)]) == 2 + 3 + 1
    assert free_parameters(dom, [("a", "b"), ("b", "a"), ("b",)]) == 2 + 3 + 6
    assert free_parameters(dom, [("a", "b", "c")]) == 3 * 4 * 2 - 1  # saturated: cells - 1


def test_the_misfit_check_runs_without_the_held_out_check_and_falls_back():
    """With no held-out share, the penalised misfit check (released tables only) still
    returns the independent model when the fit is no better, and says so."""
    df, spec = _independent_table(n=2000)
    with pytest.warns(WorseThanIndependentWarning, match="no better than"):
        tf = fit_table(df, spec, budget=PureDP(0.2), rng=2, compress=False, check_share=0,
                       max_rounds=6)  # fmt: skip
    assert "workload_check" not in tf.report and tf.report["fallback"] == "misfit check"
    check = tf.report["independent_check"]
    assert check["aic_fitted"] >= check["aic_independent"]
    assert any("independent model was returned" in n for n in tf.report["notes"])
    want = expand_model(independent_model(tf.release), tf.plan).marginals([("c1", "c2")])
    got = tf.fit.model.marginals([("c1", "c2")])
    np.testing.assert_allclose(got[("c1", "c2")], want[("c1", "c2")], atol=1e-9)
