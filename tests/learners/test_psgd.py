import dp_accounting
import jax.numpy as jnp
import numpy as np
import pytest

from pgm_dp import (
    Accountant,
    ApproxDP,
    BudgetExceededError,
    DataValidationError,
    PrivacyParameterError,
    PureDP,
)
from pgm_dp.compare.metrics import kl_divergence
from pgm_dp.learners import psgd
from pgm_dp.learners.psgd import PSGD, per_example_gradients
from pgm_dp.models import third_order_chain


def test_per_example_gradients_are_marginals_minus_indicators():
    mrf = third_order_chain(4, 2, rng=0)
    codes = np.array([[0, 1, 1, 0], [1, 1, 0, 0]])
    margs = mrf.marginals()
    axes = tuple(tuple(mrf.domain.index(v) for v in c) for c in mrf.cliques)
    g = np.asarray(
        per_example_gradients(
            list(mrf.log_potentials), [margs[c] for c in mrf.cliques], jnp.asarray(codes), axes
        )
    )
    mu = np.concatenate([np.asarray(margs[c]).ravel() for c in mrf.cliques])
    for i, x in enumerate(codes):
        e = np.concatenate([np.eye(4)[x[a] * 2 + x[b]] for a, b in axes])
        np.testing.assert_allclose(g[i], mu - e, atol=1e-12)


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_spent_budget_equals_dp_accounting():
    truth = third_order_chain(4, 2, rng=0)
    data = truth.sample(2000, rng=1)
    acct = Accountant(ApproxDP(2.0, 1e-3))
    fit = PSGD(epochs=2, batch_size=200, total="public").fit(
        data, truth, budget=ApproxDP(1.0, 1 / 2000), rng=2, accountant=acct
    )
    info = fit.info
    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(
            info["sampling_rate"], dp_accounting.GaussianDpEvent(info["noise_multiplier"])
        ),
        info["steps"],
    )
    rdp = dp_accounting.rdp.RdpAccountant()
    rdp.compose(event)
    assert info["spent"].epsilon == pytest.approx(rdp.get_epsilon(1 / 2000), rel=1e-9)
    assert info["spent"].epsilon <= 1.0 + 1e-9
    assert len(acct.charges) == 1 and acct.charges[0].cost == info["spent"]


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_psgd_recovers_model_as_noise_vanishes():
    truth = third_order_chain(4, 2, rng=0)
    data = truth.sample(20_000, rng=1)
    fit = PSGD(epochs=20, batch_size=2000, learning_rate=3.0, clip=10.0).fit(
        data, truth, budget=ApproxDP(1e4, 1e-5), rng=2
    )
    assert kl_divergence(truth, fit.model) < 5e-3


def test_psgd_refuses_bad_input_before_spending():
    truth = third_order_chain(4, 2, rng=0)
    acct = Accountant(ApproxDP(1.0, 1e-5))
    with pytest.raises(DataValidationError):
        PSGD().fit(np.full((10, 4), 5), truth, budget=ApproxDP(1.0, 1e-5), accountant=acct)
    assert not acct.charges
    with pytest.raises(PrivacyParameterError):  # a ValueError: the CLI's one-line refusal
        PSGD().fit(truth.sample(10, rng=0), truth, budget=PureDP(1.0), accountant=acct)
    for bad in ({"total": "estimate"}, {"total": -5}, {"total": True}, {"total_fraction": 1}):
        with pytest.raises(PrivacyParameterError):
            PSGD(**bad).fit(truth.sample(10, rng=0), truth, budget=ApproxDP(1.0, 1e-5),
                            accountant=acct)  # fmt: skip
    assert not acct.charges
    data = truth.sample(1000, rng=0)
    for bad in ({"clip": np.inf}, {"learning_rate": np.nan}, {"epochs": -1.0}):
        with pytest.raises(ValueError, match="finite"):
            PSGD(**bad).fit(data, truth, budget=ApproxDP(1.0, 1e-5), accountant=acct)
    with pytest.raises(TypeError):  # a bad rng is refused before the charge, too
        PSGD(epochs=1).fit(data, truth, budget=ApproxDP(1.0, 1e-5), rng="seed", accountant=acct)
    assert not acct.charges
    with pytest.raises(BudgetExceededError):
        PSGD(epochs=1).fit(data, truth, budget=ApproxDP(2.0, 1e-5), accountant=acct)


def _lot(seed=0, n=300):
    mrf = third_order_chain(5, 3, rng=seed)
    gen = np.random.default_rng(seed)
    mrf = mrf.replace([gen.normal(size=t.shape) for t in mrf.log_potentials])
    codes = mrf.domain.encode(mrf.sample(n, rng=seed + 1))
    axes = tuple(tuple(mrf.domain.index(v) for v in c) for c in mrf.cliques)
    return mrf, jnp.asarray(codes), axes


def test_closed_form_norms_match_and_never_underestimate():
    mrf, codes, axes = _lot()
    margs = mrf.marginals()
    margs = [margs[c] for c in mrf.cliques]
    g = np.asarray(per_example_gradients(list(mrf.log_potentials), margs, codes, axes))
    direct = np.linalg.norm(g, axis=1)
    fast = np.asarray(psgd._gradient_norms(margs, codes, axes))
    np.testing.assert_allclose(fast, direct, rtol=1e-10)
    assert np.all(fast >= direct)


@pytest.mark.parametrize("clip", [0.3, 1.0, 100.0])
def test_clipped_sum_matches_direct_clipping(clip):
    mrf, codes, axes = _lot(seed=3)
    jt = mrf.junction_tree()
    mask = (np.arange(codes.shape[0]) < 250).astype(float)
    tables = list(mrf.log_potentials)
    got = np.asarray(psgd._clipped_sum(jt, axes, tables, codes, mask, clip))
    margs = mrf.marginals()
    g = np.asarray(per_example_gradients(tables, [margs[c] for c in mrf.cliques], codes, axes))
    norms = np.linalg.norm(g, axis=1)
    clipped = g * np.minimum(1.0, clip / norms)[:, None]
    assert np.all(np.linalg.norm(clipped, axis=1) <= clip * (1 + 1e-12))
    np.testing.assert_allclose(got, mask @ clipped, atol=1e-9)


def test_chunked_scan_gives_the_same_run(monkeypatch):
    truth = third_order_chain(4, 2, rng=0)
    data = truth.sample(2000, rng=1)
    learner, budget = PSGD(epochs=2, batch_size=200, total="public"), ApproxDP(1.0, 1 / 2000)
    whole = learner.fit(data, truth, budget=budget, rng=2)
    per_step = 24 + 256 * 5 + 1  # dim + width * (columns + 1) + 1
    monkeypatch.setattr(psgd, "_CHUNK_CELLS", 3 * per_step)  # 7 chunks of 3, one step padded
    chunked = learner.fit(data, truth, budget=budget, rng=2)
    assert whole.info["steps"] == 20 and whole.history == chunked.history
    for a, b in zip(whole.model.log_potentials, chunked.model.log_potentials, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-12)


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_noise_covers_the_lattice_rounding_of_the_clipped_sum():
    """Floating-point safety: the sum is rounded to g Z, the noise std is sigma (C + g sqrt(d))."""
    truth = third_order_chain(4, 2, rng=0)
    fit = PSGD(epochs=1, batch_size=200, clip=2.0).fit(
        truth.sample(1000, rng=1), truth, budget=ApproxDP(1.0, 1e-3), rng=2
    )
    sigma = fit.info["noise_multiplier"]
    assert fit.info["noise_std"] >= sigma * 2.0
    assert fit.info["noise_std"] <= sigma * 2.0 * 1.01


def _numbers(obj):
    """Every number in a nested structure of dicts, lists, tuples and dataclasses."""
    if isinstance(obj, dict):
        return [x for v in obj.values() for x in _numbers(v)]
    if isinstance(obj, list | tuple):
        return [x for v in obj for x in _numbers(v)]
    if hasattr(obj, "__dataclass_fields__"):
        return [x for f in obj.__dataclass_fields__ for x in _numbers(getattr(obj, f))]
    if isinstance(obj, int | float | np.integer | np.floating) and not isinstance(obj, bool):
        return [float(obj)]
    return []


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_default_fit_hides_the_number_of_records_and_pays_for_its_count():
    """Audit finding: q = L/N, the steps and the lot sizes revealed N. By default N is a noisy
    count (charged); the fit of D and of D plus one record shows neither N."""
    truth = third_order_chain(4, 2, rng=0)
    data = truth.sample(1000, rng=1)
    for d in (data, data.iloc[:999]):
        n = len(d)
        acct = Accountant(ApproxDP(1.0, 1e-4))
        fit = PSGD(epochs=1, batch_size=100).fit(d, truth, budget=ApproxDP(1.0, 1e-4), rng=2,
                                                 accountant=acct)  # fmt: skip
        assert fit.info["total_source"] == "private" and fit.info["total"] != n
        assert float(n) not in _numbers([fit.info, fit.history])
        assert all("lot_size" not in h for h in fit.history)
        assert [c.mechanism for c in acct.charges] == ["discrete_laplace", "subsampled_gaussian"]
        assert acct.charges[0].cost == PureDP(0.05)
        spent = fit.info["spent"]
        assert spent.epsilon == pytest.approx(acct.spent.epsilon) and spent.epsilon <= 1 + 1e-9
        assert fit.info["sampling_rate"] == pytest.approx(100 / fit.info["total"])
    given = PSGD(epochs=1, batch_size=100, total=5000).fit(data, truth, budget=ApproxDP(1.0, 1e-4),
                                                           rng=2)  # fmt: skip
    assert given.info["total_source"] == "given" and given.info["sampling_rate"] == 0.02
    assert all("lot_size" not in h for h in given.history)
    public = PSGD(epochs=1, batch_size=100, total="public").fit(
        data, truth, budget=ApproxDP(1.0, 1e-4), rng=2
    )
    assert public.info["total"] == 1000 and "lot_size" in public.history[0]
