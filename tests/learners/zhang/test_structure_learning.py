"""(eps, delta)-DP structure learning by stability (Zhang et al. 2020, Sec. 6)."""

import numpy as np
import pytest

from pgm_dp.ising import gibbs_ising
from pgm_dp.learners import StabilityStructure, learn_structure
from pgm_dp.models import ising
from pgm_dp.privacy import Accountant, ApproxDP


def _chain(p, w):
    A = np.zeros((p, p))
    for i in range(p - 1):
        A[i, i + 1] = A[i + 1, i] = w
    return A


def test_returns_the_true_graph_at_large_n():
    """Five seeds: each fails with probability well under 1 % at this n (the votes are
    unanimous in our runs; the release needs the gap 20 > 2 log(1/delta)/eps + noise)."""
    A = _chain(5, 0.8)
    z = gibbs_ising(A, n_chains=8000, n_sweeps=20, rng=0)
    truth = frozenset((i, i + 1) for i in range(4))
    for seed in range(5):
        res = learn_structure(z, 4.0, 1e-3, eta=0.8, lam=1.5, blocks=20, steps=80, rng=seed)
        assert res.edges == truth


def test_no_answer_on_data_built_to_be_unstable():
    """The coupling sits at the threshold eta/2: the blocks split their votes, the gap is
    small and the test of PTR fails (false release probability < delta-scale)."""
    A = _chain(3, 0.25)
    z = gibbs_ising(A, n_chains=4000, n_sweeps=20, rng=1)
    acc = Accountant(ApproxDP(4.0, 1e-3))
    res = learn_structure(z, 4.0, 1e-3, eta=0.5, lam=1.0, blocks=20, steps=80, rng=2,
                          accountant=acc)  # fmt: skip
    assert res.edges is None
    assert len(res.votes) > 1
    assert acc.spent == ApproxDP(4.0, 1e-3)


def test_registered_learner_builds_the_graph_model():
    A = _chain(4, 0.8)
    z = gibbs_ising(A, n_chains=6000, n_sweeps=20, rng=3)
    codes = ((z + 1) / 2).astype(int)
    fit = StabilityStructure(eta=0.8, lam=1.5, blocks=15, steps=80).fit(
        codes, ising(np.zeros((4, 4))), budget=ApproxDP(4.0, 1e-3), rng=0
    )
    assert {c for c in fit.model.cliques if len(c) == 2} == {
        ("X0", "X1"),
        ("X1", "X2"),
        ("X2", "X3"),
    }
    with pytest.raises(TypeError):
        StabilityStructure().fit(codes, ising(np.zeros((4, 4))), budget=None)
