"""Noisy sufficient statistics (Bernstein et al. 2017, Sec. 3.1, Prop. 3, Eq. 3)."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from pgm_dp import Domain, sufficient_statistics
from pgm_dp.errors import (
    BudgetExceededError,
    DataValidationError,
    DomainError,
    PrivacyParameterError,
)
from pgm_dp.privacy import (
    ZCDP,
    Accountant,
    ApproxDP,
    NoiseModel,
    NoisyMarginals,
    PureDP,
    release_marginals,
)

DOM = Domain(["A", "B", "C"], [2, 3, 4])
CLIQUES = [("A", "B"), ("B", "C"), ("C",)]


def make_data(n: int = 500, seed: int = 0) -> pd.DataFrame:
    g = np.random.default_rng(seed)
    return pd.DataFrame({a: g.integers(0, k, n) for a, k in zip(DOM, DOM.shape, strict=True)})


@dataclass(frozen=True)
class FakeMRF:
    domain: Domain
    cliques: tuple


def test_laplace_scale_is_num_cliques_over_eps():
    # issue #16: the default is now discrete_laplace; Eq. 3's Laplace is asked for by name
    rel = release_marginals(
        make_data(), CLIQUES, DOM, budget=PureDP(0.5), rng=0, mechanism="laplace"
    )
    for c in rel.cliques:
        assert rel.noise[c] == NoiseModel("laplace", 3 / 0.5)  # Eq. 3: |C|/eps
        assert rel.noisy[c].shape == DOM.sizes(c) and rel.noisy[c].dtype == np.float64
    assert rel.sensitivity == 3 and rel.budget == PureDP(0.5) and rel.mechanism == "laplace"
    assert rel.total_source == "estimate" and not rel.total_is_public  # the default
    assert rel.total != 500 and abs(rel.total - 500) < 60


def test_noise_is_added_to_true_tables():
    data = make_data(2000)
    true = sufficient_statistics(data, CLIQUES, DOM)
    reps = [
        release_marginals(data, CLIQUES, DOM, budget=PureDP(1.0), rng=s) for s in range(1000, 1400)
    ]
    res = np.concatenate(
        [np.concatenate([(r.noisy[c] - true[c]).ravel() for c in CLIQUES]) for r in reps]
    )
    assert abs(res.mean()) < 0.15 and np.mean(np.abs(res)) == pytest.approx(3.0, rel=0.05)


@pytest.mark.parametrize(
    "mech,budget,scale",
    [
        ("gaussian", ZCDP(0.5), math.sqrt(3) / 1.0),
        ("discrete_gaussian", ZCDP(1.5), 1.0),
        ("discrete_laplace", PureDP(2.0), 1.5),
    ],
)
def test_other_mechanisms(mech, budget, scale):
    rel = release_marginals(make_data(), CLIQUES, DOM, budget=budget, mechanism=mech, rng=1)
    m = rel.noise[("C",)]
    assert m.kind == mech and m.scale == pytest.approx(scale)
    if mech.startswith("discrete"):
        assert all(rel.noisy[c].dtype == np.int64 for c in CLIQUES)


def test_gaussian_approx_dp_is_analytic():
    from pgm_dp.privacy import calibrate_gaussian, zcdp_rho_within

    rel = release_marginals(
        make_data(), CLIQUES, DOM, budget=ApproxDP(1.0, 1e-6), mechanism="gaussian", rng=0
    )
    # issue #16: the lattice Gaussian is calibrated through zCDP (CKS), proved for discrete
    # noise; the analytic Gaussian (continuous noise only) is a lower bound on its scale
    analytic = calibrate_gaussian(math.sqrt(3), ApproxDP(1.0, 1e-6))
    rho = zcdp_rho_within(ApproxDP(1.0, 1e-6))
    assert rel.noise[("A", "B")].scale == pytest.approx(math.sqrt(3) / math.sqrt(2 * rho))
    assert rel.noise[("A", "B")].scale > analytic.scale


def test_duck_typed_model_and_domain_required():
    mrf = FakeMRF(DOM, tuple(CLIQUES))
    a = release_marginals(make_data(), mrf, budget=PureDP(1.0), rng=3)
    b = release_marginals(make_data(), CLIQUES, DOM, budget=PureDP(1.0), rng=3)
    assert a == b
    with pytest.raises(DomainError):
        release_marginals(make_data(), CLIQUES, budget=PureDP(1.0))
    with pytest.raises(DomainError):
        release_marginals(make_data(), mrf, Domain(["A"], [2]), budget=PureDP(1.0))
    with pytest.raises(DomainError):
        release_marginals(make_data(), [("A", "Z")], DOM, budget=PureDP(1.0))
    with pytest.raises(DomainError):
        release_marginals(make_data(), [], DOM, budget=PureDP(1.0))


@pytest.mark.parametrize(
    "mech,budget",
    [
        ("laplace", PureDP(1.0)),
        ("gaussian", ZCDP(0.3)),
        ("discrete_laplace", PureDP(1.0)),
        ("discrete_gaussian", ApproxDP(1.0, 1e-6)),
    ],
)
@pytest.mark.parametrize("total", ["public", "private", "estimate", 1234.0])
def test_json_round_trip_exact(mech, budget, total):
    rel = release_marginals(
        make_data(), CLIQUES, DOM, budget=budget, mechanism=mech, rng=4, total=total
    )
    text = rel.to_json()
    back = NoisyMarginals.from_json(text)
    assert back == rel and back.to_json() == text
    assert "records" not in text
    with pytest.raises(ValueError):
        back.noisy[("C",)][0] = 1  # read-only arrays


def test_json_rejects_foreign_documents_and_bad_names():
    with pytest.raises(DataValidationError):
        NoisyMarginals.from_json('{"format": "other"}')
    dom = Domain([("x", 1)], [2])
    rel = release_marginals(np.array([[0], [1]]), [(("x", 1),)], dom, budget=PureDP(1.0), rng=0)
    with pytest.raises(DomainError):
        rel.to_json()


def test_total_options():
    data = make_data(800)
    rel = release_marginals(data, CLIQUES, DOM, budget=PureDP(1.0), rng=0, total=1000)
    assert rel.total == 1000 and rel.total_source == "given" and rel.total_is_public
    acc = Accountant(PureDP(1.0))
    rel = release_marginals(
        data,
        CLIQUES,
        DOM,
        budget=PureDP(1.0),
        rng=0,
        mechanism="laplace",  # issue #16: the default is now discrete_laplace
        total="private",
        total_fraction=0.2,
        accountant=acc,
    )
    assert not rel.total_is_public and rel.total_noise == NoiseModel("laplace", 1 / 0.2)
    assert rel.noise[("C",)].scale == pytest.approx(3 / 0.8)
    assert len(acc.charges) == 2 and acc.spent.epsilon == pytest.approx(1.0)
    assert abs(rel.total - 800) < 100
    rel = release_marginals(data, CLIQUES, DOM, budget=PureDP(1.0), rng=0, total="estimate")
    assert rel.total_source == "estimate" and abs(rel.total - 800) < 60
    for bad in ["secret", -1.0, math.nan]:
        with pytest.raises(PrivacyParameterError):
            release_marginals(data, CLIQUES, DOM, budget=PureDP(1.0), total=bad)
    with pytest.raises(PrivacyParameterError):
        release_marginals(data, CLIQUES, DOM, budget=PureDP(1.0), total="private", total_fraction=1)


def test_sensitivity_options():
    data = make_data()
    rel = release_marginals(data, CLIQUES, DOM, budget=PureDP(1.0), rng=0, neighbouring="replace")
    assert rel.sensitivity == 6 and rel.noise[("C",)].scale == 6.0
    rel = release_marginals(
        data, CLIQUES, DOM, budget=ZCDP(0.5), mechanism="gaussian", neighbouring="replace", rng=0
    )
    assert rel.sensitivity == pytest.approx(math.sqrt(6))
    rel = release_marginals(data, CLIQUES, DOM, budget=PureDP(1.0), rng=0, max_records_per_person=4)
    assert rel.sensitivity == 12 and rel.noise[("C",)].scale == 12.0
    with pytest.raises(PrivacyParameterError):
        release_marginals(data, CLIQUES, DOM, budget=PureDP(1.0), max_records_per_person=0)
    with pytest.raises(PrivacyParameterError):
        release_marginals(data, CLIQUES, DOM, budget=PureDP(1.0), neighbouring="swap")
    with pytest.raises(PrivacyParameterError):
        release_marginals(
            data, CLIQUES, DOM, budget=PureDP(1.0), neighbouring="replace", total="private"
        )
    with pytest.raises(PrivacyParameterError):
        release_marginals(data, CLIQUES, DOM, budget=PureDP(1.0), mechanism="cauchy")
    with pytest.raises(PrivacyParameterError):
        release_marginals(data, CLIQUES, DOM, budget=ZCDP(1.0), mechanism="laplace")


def test_weights_sec_4_2():
    data = make_data(300)
    w = np.full(300, 0.25)
    w0 = w.copy()
    kw = {"mechanism": "laplace"}  # issue #16: weighted counts need the (lattice) Laplace
    rel = release_marginals(
        data, CLIQUES, DOM, budget=PureDP(1.0), rng=0, weights=w, total="public", **kw
    )
    assert rel.sensitivity == 3 and rel.total == pytest.approx(75.0)
    np.testing.assert_array_equal(w, w0)
    for bad in [np.full(300, 1.5), np.full(300, -0.1), np.full(299, 0.5), np.full(300, np.nan)]:
        with pytest.raises(DataValidationError):
            release_marginals(data, CLIQUES, DOM, budget=PureDP(1.0), weights=bad, **kw)
    with pytest.raises(DataValidationError):
        release_marginals(
            data, CLIQUES, DOM, budget=PureDP(1.0), weights=w, mechanism="discrete_laplace"
        )
    ones = release_marginals(
        data,
        CLIQUES,
        DOM,
        budget=PureDP(1.0),
        weights=np.ones(300),
        mechanism="discrete_laplace",
        rng=0,
    )
    assert ones.noisy[("C",)].dtype == np.int64
    with pytest.raises(PrivacyParameterError):
        release_marginals(
            data, CLIQUES, DOM, budget=PureDP(1.0), weights=w, max_records_per_person=2, **kw
        )


@pytest.mark.parametrize(
    "bad",
    [
        lambda d: d.assign(A=d["A"] + 5),  # out of domain
        lambda d: d.drop(columns=["B"]),  # missing variable
        lambda d: d.assign(C=d["C"].astype(float).where(d.index != 3)),  # NaN
        lambda d: d.iloc[:0],  # empty
    ],
)
def test_bad_data_error_before_charge_and_data_unchanged(bad):
    data = bad(make_data())
    before = data.copy(deep=True)
    acc = Accountant(PureDP(1.0))
    g = np.random.default_rng(0)
    state = copy.deepcopy(g.bit_generator.state)
    with pytest.raises(DataValidationError):
        release_marginals(data, CLIQUES, DOM, budget=PureDP(1.0), rng=g, accountant=acc)
    assert acc.charges == () and acc.spent.epsilon == 0.0
    assert g.bit_generator.state == state
    pd.testing.assert_frame_equal(data, before)


def test_bad_budget_error_before_anything():
    acc = Accountant(ApproxDP(1.0, 1e-6))
    for kw in [dict(budget=ApproxDP(1.0, 1e-6)), dict(budget=PureDP(1.0), mechanism="gaussian")]:
        with pytest.raises(PrivacyParameterError):
            release_marginals(make_data(), CLIQUES, DOM, accountant=acc, **kw)
    assert acc.charges == ()


def test_overspend_refused_before_noise():
    data = make_data()
    arr = data.to_numpy().copy()
    acc = Accountant(PureDP(1.0))
    release_marginals(data, CLIQUES, DOM, budget=PureDP(0.8), rng=0, accountant=acc)
    g = np.random.default_rng(1)
    state = copy.deepcopy(g.bit_generator.state)
    for total in ["public", "private"]:
        with pytest.raises(BudgetExceededError):
            release_marginals(
                data, CLIQUES, DOM, budget=PureDP(0.3), rng=g, accountant=acc, total=total
            )
    assert g.bit_generator.state == state and len(acc.charges) == 1
    np.testing.assert_array_equal(data.to_numpy(), arr)
    # numpy input is not modified either
    x = arr.copy()
    release_marginals(x, CLIQUES, DOM, budget=PureDP(0.1), rng=0, accountant=acc)
    np.testing.assert_array_equal(x, arr)
