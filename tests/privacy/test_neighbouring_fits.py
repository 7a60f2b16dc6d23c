"""What a fit releases on neighbouring data sets (one record replaced, the relation the
learners claim) and on crafted inputs: a data-dependent step count
(Zhang et al.'s Alg. 3), a Newton iteration count and a refusal that depend on the data,
refusals after a charge (``fit_table``, PSGD), a saved file that widens a memory limit, a
spent budget printed above the total. Each test failed before its fix; none has a false-alarm
rate (the assertions are about what is released, not about noise)."""

from __future__ import annotations

import numpy as np
import pytest

from pgm_dp.learners.zhang import learn_pairwise
from pgm_dp.privacy import ZCDP, Accountant


# -- 1. Alg. 3's T from the smallest |S_uv| -----------------------------------------------------
def _pair_of_tables() -> tuple[np.ndarray, np.ndarray]:
    """``k = 3``, ``p = 2``, ``n = 186``: node 0 has 31, 31, 124 records in states 0, 1, 2
    (smallest ``|S_uv| = 62``); the neighbour moves one record of node 0 from 2 to 0 (63)."""
    node0 = np.repeat([0, 1, 2], [31, 31, 124])
    node1 = np.tile([0, 1, 2], 62)
    d = np.stack([node0, node1], axis=1)
    d2 = d.copy()
    d2[-1, 0] = 0  # one record replaced
    return d, d2


def test_pairwise_steps_and_scale_do_not_depend_on_the_subset_sizes():
    """Before: T = 7 on D and 8 on D' on every draw (eps = inf against rho-zCDP)."""
    d, d2 = _pair_of_tables()
    a = learn_pairwise(d, 3, 1.0, 1.0, rng=0)
    b = learn_pairwise(d2, 3, 1.0, 1.0, rng=0)
    assert a.steps == b.steps
    assert a.sum_scale == b.sum_scale


def test_pairwise_fit_info_is_the_same_function_of_public_numbers_on_neighbours():
    from pgm_dp import Domain
    from pgm_dp.learners.zhang import ZhangPairwise

    dom = Domain(["a", "b"], [3, 3])
    infos = []
    for data in _pair_of_tables():
        acc = Accountant(ZCDP(1.0))
        fit = ZhangPairwise().fit(data, dom, budget=ZCDP(1.0), rng=0, accountant=acc)
        infos.append(({k: v for k, v in fit.info.items() if k not in ("W", "Theta")},
                      [(c.what, c.scale, c.cost) for c in acc.charges]))  # fmt: skip
    assert infos[0] == infos[1]


def test_a_pairwise_subset_without_records_is_not_refused():
    """Before: D' (S_12 of node 0 empty) refused, D (one record in it) released."""
    d = np.zeros((40, 2), dtype=int)
    d[:, 1] = np.arange(40) % 3
    d[0, 0] = 1
    d2 = d.copy()
    d2[0, 0] = 0
    a = learn_pairwise(d, 3, 1.0, 1.0, rng=0)
    b = learn_pairwise(d2, 3, 1.0, 1.0, rng=0)
    assert a.steps == b.steps and np.all(np.isfinite(b.W))


# -- 3, 4. ising_logistic: Newton's iteration count, its refusal, debias, the relation ------------
def _spins_pair(n: int = 31, p: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    z = np.where(np.random.default_rng(seed).random((n, p)) < 0.5, -1.0, 1.0)
    z2 = z.copy()
    z2[0] = -z2[0]  # one record replaced
    return z, z2


def test_logistic_releases_no_iteration_count_and_the_same_public_fields():
    from dataclasses import fields

    from pgm_dp.learners.zhang import OutputPerturbationIsing
    from pgm_dp.learners.zhang.logistic import LogisticEstimate
    from pgm_dp.models import ising

    assert {f.name for f in fields(LogisticEstimate)} == {"A", "theta", "lam2", "sigma", "spent"}
    truth = ising(np.zeros((3, 3)), np.zeros(3))
    infos = []
    for z in _spins_pair():
        fit = OutputPerturbationIsing().fit(((z + 1) / 2).astype(int), truth, budget=ZCDP(1.0),
                                            rng=0)  # fmt: skip
        infos.append({k: v for k, v in fit.info.items() if k not in ("A", "theta")})
    assert infos[0] == infos[1] and set(infos[0]) == {"lam2", "sigma", "spent", "budget"}


def test_logistic_is_not_refused_on_one_data_set_and_released_on_its_neighbour():
    """Before: lam2 = 1e-12, max_iter = 9 refused some data sets ("Newton did not reach")
    and released their neighbours, and debias raised LinAlgError after the charge at such a
    lam2. Now both sides are released, with the same public fields and charges."""
    from pgm_dp.learners.zhang.logistic import learn_ising_logistic

    for seed in range(4):
        seen = []
        for z in _spins_pair(seed=seed):
            acc = Accountant(ZCDP(1.0))
            est = learn_ising_logistic(z, 1.0, lam2=1e-12, max_iter=9, rng=0, accountant=acc)
            seen.append((est.lam2, est.sigma, est.spent, [(c.what, c.cost) for c in acc.charges]))
        assert seen[0] == seen[1]


def test_logistic_solver_is_within_its_stated_accuracy_even_when_newton_stops_early():
    """Newton cut at one step: the certified gradient descent finishes (no refusal) within
    ``gamma / (2 lam2)`` of the minimiser that Newton reaches in full."""
    from pgm_dp.learners.zhang.logistic import _fit

    z = np.where(np.random.default_rng(3).random((400, 4)) < 0.3, -1.0, 1.0)
    full = _fit(z, 0.05, 0.01, 100)
    cut = _fit(z, 0.05, 0.01, 1)
    gamma = 0.01 * 2.0 / 400
    assert np.max(np.linalg.norm(full - cut, axis=1)) <= gamma / 0.05


def test_debias_never_raises_on_extreme_released_weights():
    """Before: LinAlgError (singular H) after the charge, at lam2 = 1e-9's noise."""
    from pgm_dp.learners.zhang.logistic import debias

    W = np.random.default_rng(0).normal(0.0, 1e6, (4, 5))
    out = debias(W, 1e-9)
    assert out.shape == W.shape and np.all(np.isfinite(out))


# -- 5. fit_table: refusals after a charge -------------------------------------------------------
CITIES = ["Lyon", "Nice", "Paris", "Lille", "Metz"]
SPEC = {"age": {"bins": [18, 40, 90]}, "visits": list(range(7)), "city": CITIES,
        "smoker": ["no", "yes"]}  # fmt: skip


def _people(n: int, seed: int = 0):
    import pandas as pd

    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n)
    smoker = np.where(rng.random(n) < np.where(age < 40, 0.6, 0.15), "yes", "no")
    return pd.DataFrame({"age": age, "city": rng.choice(CITIES, n), "smoker": smoker,
                         "visits": rng.integers(0, 7, n)})  # fmt: skip


def _fit(df, spec, budget, **options):
    from pgm_dp.table.fit import fit_table

    acc = Accountant(budget)
    return fit_table(df, spec, budget=budget, rng=0, accountant=acc, **options), acc


def test_a_workload_that_leaves_out_a_column_fits_it_as_measured():
    """Before: the one-way tables were charged, then AIM refused the workload."""
    from pgm_dp import PureDP

    tf, acc = _fit(_people(600), SPEC, PureDP(1.0), workload=[("age", "city")], max_rounds=3)
    assert {("smoker",), ("visits",)} <= set(tf.release.cliques)
    assert acc.spent.epsilon <= 1.0


def test_a_one_column_declaration_is_refused_before_any_charge():
    from pgm_dp import PureDP
    from pgm_dp.table.fit import fit_table

    acc = Accountant(PureDP(1.0))
    with pytest.raises(ValueError, match="needs 2 columns"):
        fit_table(_people(600)[["age"]], {"age": SPEC["age"]}, budget=PureDP(1.0),
                  accountant=acc, rng=0)  # fmt: skip
    assert acc.charges == ()


def test_one_column_left_after_dropping_identifiers_fits_the_one_way_table():
    """Before: the one-way table was charged, then AIM refused a table of one column."""
    from pgm_dp import PureDP

    df = _people(600)[["age"]].assign(caseid=[f"id{i}" for i in range(600)])
    tf, acc = _fit(df, {"age": SPEC["age"]}, PureDP(1.0), drop_identifiers=True)
    assert tf.release.cliques == (("age",),) and tf.selection.cliques == ()
    assert any("AIM did not run" in note for note in tf.report["notes"])
    assert 0 < acc.spent.epsilon < 1.0  # the rest is not spent


@pytest.mark.slow
def test_every_pair_too_large_after_compression_fits_the_one_way_tables():
    """Before: DomainError (every 2-way marginal above the workload's cell limit) after the
    one-way release that decided the compressed domain."""
    import pandas as pd

    from pgm_dp import PureDP

    i = np.arange(12_000)
    df = pd.DataFrame({"x": i % 120, "y": (7 * i) % 121})
    spec = {"x": list(range(120)), "y": list(range(121))}
    tf, acc = _fit(df, spec, PureDP(1.0))
    assert set(tf.release.cliques) == {("x",), ("y",)}
    assert any("AIM did not run" in note for note in tf.report["notes"])


def test_an_approx_dp_accountant_with_private_quantiles_is_planned_before_the_first_charge():
    """Before: 8 charges (7 quantiles, the one-way tables), then BudgetExceededError: the
    accountant added the quantiles' pure epsilon apart from the rho the plan converted to."""
    from pgm_dp import ApproxDP

    spec = dict(SPEC, age={"bounds": [18, 90]})
    tf, acc = _fit(_people(600), spec, ApproxDP(1.0, 1e-6), max_rounds=3)
    assert len(acc.charges) == 1 and isinstance(acc.charges[0].cost, ZCDP)
    assert acc.spent.epsilon <= 1.0 and acc.spent.delta <= 1e-6
    assert any(s["step"].startswith("prepare: private quantiles") for s in tf.report["steps"])


@pytest.mark.parametrize(
    "options, message",
    [
        ({"estimator": 3}, "estimator"),
        ({"compress": False, "max_rounds": 2}, "below the 4 one-way marginals"),
    ],
)
def test_what_the_declaration_decides_is_refused_before_any_charge(options, message):
    """Before: the private quantiles (or the one-way tables) were charged, then AIM refused."""
    from pgm_dp import PureDP
    from pgm_dp.table.fit import fit_table

    acc = Accountant(PureDP(1.0))
    spec = dict(SPEC, age={"bounds": [18, 90]})  # private quantiles: charged first
    with pytest.raises(ValueError, match=message):
        fit_table(_people(300), spec, budget=PureDP(1.0), accountant=acc, rng=0, **options)
    assert acc.charges == ()


# -- 10. the spent budget composes to at most the total, exactly ---------------------------------
def test_aim_last_round_takes_exactly_what_is_left():
    from fractions import Fraction

    from pgm_dp.select.schedule import Schedule

    for notion in ("pure", "zcdp"):
        s = Schedule(notion, 1.0, 10)
        used = Fraction(0.3) + Fraction(0.1) + Fraction(0.2) + Fraction(1 / 3)
        measure, select, last = s.next(used, (0.3, 0.1))
        assert last and used + Fraction(measure) + Fraction(select) <= 1
        eps = s.selection_epsilon(select)
        assert (eps**2 / 8 if notion == "zcdp" else eps) <= select


@pytest.mark.parametrize("eps", [1.0])
def test_a_pure_fit_spends_at_most_its_budget_exactly(eps):
    """Before: PureDP(1.0000000000000002) spent (and printed) for PureDP(1.0)."""
    from fractions import Fraction

    from pgm_dp import PureDP

    spec = {"age": {"bins": [18, 30, 45, 60, 90]}, "visits": list(range(7)), "city": CITIES,
            "smoker": ["no", "yes"]}  # fmt: skip
    tf, acc = _fit(_people(1000, seed=3), spec, PureDP(eps))
    assert sum(Fraction(c.cost.epsilon) for c in acc.charges) <= Fraction(eps)
    assert acc.spent.epsilon <= eps and tf.report["budget_spent"] == str(acc.spent)


# -- 7. PSGD: the count of N charged, then calibration failed ------------------------------------
def _psgd_problem():
    from pgm_dp import Domain
    from pgm_dp.models import MarkovRandomField

    mrf = MarkovRandomField(Domain(["A", "B"], [2, 2]), [("A", "B")])
    return np.random.default_rng(0).integers(0, 2, (500, 2)), mrf


def test_psgd_at_a_tiny_epsilon_fits_instead_of_failing_after_the_count():
    """Before: the noisy N was charged, then ApproxDP(0.0, delta) (the accounting's epsilon
    of so much noise) raised."""
    from pgm_dp import ApproxDP
    from pgm_dp.learners.psgd import PSGD

    data, mrf = _psgd_problem()
    acc = Accountant(ApproxDP(1e-3, 1e-5))
    fit = PSGD(epochs=1).fit(data, mrf, budget=ApproxDP(1e-3, 1e-5), rng=0, accountant=acc)
    assert len(acc.charges) == 2 and 0 < fit.info["spent"].epsilon <= 1e-3


def test_psgd_calibrates_before_the_count_is_charged(monkeypatch):
    import pgm_dp.learners.psgd as psgd
    from pgm_dp import ApproxDP
    from pgm_dp.errors import PrivacyParameterError

    def refuse(*args, **kwargs):
        raise PrivacyParameterError("no noise multiplier meets the target")

    monkeypatch.setattr(psgd, "calibrate_noise_multiplier", refuse)
    data, mrf = _psgd_problem()
    acc = Accountant(ApproxDP(1.0, 1e-5))
    with pytest.raises(PrivacyParameterError):
        psgd.PSGD(epochs=1).fit(data, mrf, budget=ApproxDP(1.0, 1e-5), rng=0, accountant=acc)
    assert acc.charges == ()


# -- 8. a saved model lifts the memory guard -----------------------------------------------------
def test_a_loaded_model_never_widens_max_cells(tmp_path):
    import json
    import zipfile

    from pgm_dp.inference.junction_tree import DEFAULT_MAX_CELLS
    from pgm_dp.io import load, save
    from pgm_dp.models import third_order_chain

    path = save(third_order_chain(4, 2, rng=0), tmp_path / "m.npz")
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    meta = json.loads(np.load(path)["__meta__"].item())
    meta["max_cells"] = 2**62  # crafted: lift the guard
    crafted = dict(np.load(path))
    crafted["__meta__"] = np.array(json.dumps(meta))
    assert "__meta__.npy" in members
    np.savez(tmp_path / "crafted.npz", **crafted)
    assert load(tmp_path / "crafted.npz").max_cells == DEFAULT_MAX_CELLS
    narrower = dict(crafted, __meta__=np.array(json.dumps(dict(meta, max_cells=1000))))
    np.savez(tmp_path / "narrow.npz", **narrower)
    assert load(tmp_path / "narrow.npz").max_cells == 1000  # narrowing is kept
