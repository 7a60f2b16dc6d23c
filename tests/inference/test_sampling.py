import numpy as np
import pytest
from conftest import brute_marginal, random_model
from scipy import stats

from pgm_dp.models import third_order_chain


def _chi2_pvalue(counts, probs):
    keep = probs > 0
    assert counts[~keep].sum() == 0, "a zero-probability state was sampled"
    if keep.sum() < 2:  # a single possible cell: nothing to test beyond the line above
        return 1.0
    return stats.chisquare(counts[keep], probs[keep] * counts.sum()).pvalue


@pytest.mark.parametrize("seed", range(4))
def test_exact_samples_match_marginals_chi_square(seed):
    # Each test makes a few chi-square tests at level 1e-4: false-alarm rate < 1e-3 per run,
    # and seeds are fixed, so the outcome is deterministic.
    rng = np.random.default_rng(seed)
    mrf = random_model(rng, 5, 5, scale=1.5)
    samples = mrf.sample(20_000, rng=seed)
    assert list(samples.columns) == list(mrf.domain.attributes)
    codes = samples.to_numpy()
    for cl in mrf.cliques:
        idx = np.ravel_multi_index(
            tuple(codes[:, mrf.domain.index(v)] for v in cl), mrf.domain.sizes(cl)
        )
        counts = np.bincount(idx, minlength=mrf.domain.size(cl))
        assert _chi2_pvalue(counts, brute_marginal(mrf, cl).ravel()) > 1e-4


def test_sampling_is_reproducible_and_bounded():
    mrf = third_order_chain(10, 10, rng=0)
    a = mrf.sample(1000, rng=7)
    b = mrf.sample(1000, rng=np.random.default_rng(7))
    assert a.equals(b)
    assert a.to_numpy().min() >= 0 and a.to_numpy().max() <= 9


def test_structural_zeros_are_never_sampled():
    from pgm_dp import Domain, MarkovRandomField

    dom = Domain(["A", "B"], [3, 3])
    with np.errstate(divide="ignore"):
        table = np.log(np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0]]))
    mrf = MarkovRandomField(dom, [("A", "B")], [table])
    s = mrf.sample(5000, rng=0).to_numpy()
    assert not np.any(np.exp(table)[s[:, 0], s[:, 1]] == 0)


def test_impossible_separator_states_leave_the_other_draws_exact():
    """A separator state of probability zero (B = 1) gives an all -inf conditional row; it
    used to turn the flattened CDFs to NaN and corrupt the draws of the other rows."""
    from pgm_dp import Domain, MarkovRandomField

    dom = Domain(["A", "B", "C"], [3, 3, 3])
    t_ab = np.zeros((3, 3))
    t_ab[:, 1] = -np.inf
    t_bc = np.array([[0.0, -np.inf, 0.0], [0.0, 0.0, 0.0], [-np.inf, 0.0, 0.0]])
    mrf = MarkovRandomField(dom, [("A", "B"), ("B", "C")], [t_ab, t_bc])
    s = mrf.sample(20_000, rng=0)
    assert np.isfinite(mrf.log_prob(s)).all()
    counts = np.bincount(s[s.B == 2].C, minlength=3)
    assert counts[0] == 0
    assert stats.chisquare(counts[1:]).pvalue > 1e-3  # C | B=2 is uniform on {1, 2}


def test_a_model_with_no_possible_state_is_refused():
    from pgm_dp import Domain, DomainError, MarkovRandomField

    mrf = MarkovRandomField(Domain(["A", "B"], [2, 2]), [("A", "B")], [np.full((2, 2), -np.inf)])
    for call in (lambda: mrf.sample(3, rng=0), mrf.marginals, mrf.log_partition):
        with pytest.raises(DomainError, match="probability zero"):
            call()


def test_sample_rejects_bad_n():
    mrf = third_order_chain(4, 2, rng=0)
    with pytest.raises(ValueError):
        mrf.sample(0, rng=0)


def test_gibbs_method_of_mrf_matches_exact_marginals():
    from pgm_dp.models import ising

    A = np.triu(np.random.default_rng(0).normal(scale=0.3, size=(6, 6)), 1)
    mrf = ising(A + A.T, np.random.default_rng(1).normal(scale=0.2, size=6))
    samples = mrf.sample(20_000, rng=0, method="gibbs").to_numpy()
    for cl in mrf.cliques:
        idx = np.ravel_multi_index(
            tuple(samples[:, mrf.domain.index(v)] for v in cl), mrf.domain.sizes(cl)
        )
        freq = np.bincount(idx, minlength=mrf.domain.size(cl)) / len(samples)
        # 20,000 thinned, nearly independent draws: sd of a frequency <= 0.0036; 0.02 is
        # over 5 sd (chains are only approximately independent, so the slack is generous).
        assert np.abs(freq - np.asarray(mrf.marginal(cl)).ravel()).max() < 0.02
