import warnings

import numpy as np
import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    mbi = pytest.importorskip("mbi")

from pgm_dp import Domain, MarkovRandomField, PureDP  # noqa: E402
from pgm_dp.compare.metrics import kl_divergence  # noqa: E402
from pgm_dp.learners.mbi import (  # noqa: E402
    fit_mbi,
    from_mbi_potentials,
    to_mbi_measurements,
)
from pgm_dp.models import third_order_chain  # noqa: E402
from pgm_dp.privacy import release_marginals  # noqa: E402


def _permuted_model() -> MarkovRandomField:
    """Cliques whose variable order differs from the domain's, one nested in another."""
    dom = Domain(["A", "B", "C", "D"], [2, 3, 2, 3])
    cliques = [("B", "A"), ("D", "B", "C"), ("C",)]
    rng = np.random.default_rng(0)
    return MarkovRandomField(dom, cliques, [rng.normal(size=dom.sizes(c)) for c in cliques])


def test_conversion_is_exact():
    truth = _permuted_model()
    data = truth.sample(3000, rng=1)
    release = release_marginals(data, truth, budget=PureDP(1.0), rng=2)
    fits = fit_mbi(release, truth, iters=(50, 150))
    assert [f.iterations for f in fits] == [50, 150]
    for fit in fits:
        theirs = mbi.marginal_oracles.brute_force_marginals(fit.potentials, 1.0)
        ours = fit.model.marginals()
        for c in truth.cliques:
            np.testing.assert_allclose(
                np.asarray(ours[c]), np.asarray(theirs.project(c).values), atol=1e-8
            )
    again = from_mbi_potentials(fits[-1].potentials, truth)
    assert abs(kl_divergence(fits[-1].model, again)) < 1e-12


def test_measurements_follow_clique_order_and_noise():
    truth = _permuted_model()
    release = release_marginals(truth.sample(500, rng=1), truth, budget=PureDP(2.0), rng=2)
    dom, ms = to_mbi_measurements(release)
    assert dom.attributes == ("A", "B", "C", "D")
    for m, c in zip(ms, release.cliques, strict=True):
        assert m.clique == c
        np.testing.assert_array_equal(m.noisy_measurement, np.ravel(release.noisy[c]))
        # the default release is the exact discrete Laplace: its own variance, not sqrt(2) b
        assert release.noise[c].kind == "discrete_laplace"
        assert m.stddev == pytest.approx(np.sqrt(release.noise[c].variance))
        assert m.stddev < np.sqrt(2) * release.noise[c].scale


def test_near_noiseless_release_recovers_the_truth():
    truth = third_order_chain(4, 2, rng=0)
    data = truth.sample(20_000, rng=1)
    release = release_marginals(data, truth, budget=PureDP(1e4), rng=2)
    fits = fit_mbi(release, truth, iters=(100, 1000))
    kls = [kl_divergence(truth, f.model) for f in fits]
    assert kls[-1] <= kls[0] and kls[-1] < 2e-3
    margs, true = fits[-1].model.marginals(), truth.marginals()
    err = max(float(np.abs(np.asarray(margs[c]) - np.asarray(true[c])).max()) for c in true)
    assert err < 0.02
    assert all(f.seconds >= 0 and f.compile_seconds >= 0 for f in fits)


def test_iteration_counts_must_be_callback_multiples():
    truth = third_order_chain(4, 2, rng=0)
    release = release_marginals(truth.sample(100, rng=1), truth, budget=PureDP(1.0), rng=2)
    with pytest.raises(ValueError):
        fit_mbi(release, truth, iters=(120,))
