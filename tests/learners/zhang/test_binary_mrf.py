"""Binary t-wise MRFs: Zhang et al. (2020) Alg. 4 (l1) and Alg. 5 (l-infinity)."""

import numpy as np
import pytest

from pgm_dp.domain import Domain
from pgm_dp.errors import DomainError, ModelTooLargeError
from pgm_dp.learners import ZhangBinaryMRF, learn_binary_mrf
from pgm_dp.models import MarkovRandomField, third_order_chain
from pgm_dp.privacy import ZCDP, Accountant

S = np.array([-1.0, 1.0])
TRUE = {(0, 1, 2): 0.6, (2, 3): -0.5, (0, 1): 0.3}


@pytest.fixture(scope="module")
def model_and_spins():
    g = np.meshgrid(S, S, S, indexing="ij")
    t3 = 0.6 * g[0] * g[1] * g[2] + 0.3 * g[0] * g[1]
    mrf = MarkovRandomField(
        Domain(["X0", "X1", "X2", "X3"], [2] * 4),
        [("X0", "X1", "X2"), ("X2", "X3")],
        [t3, -0.5 * np.outer(S, S)],
    )
    codes = mrf.domain.encode(mrf.sample(20_000, rng=0))
    return mrf, 2.0 * codes - 1.0


MAXIMAL = [(0, 1, 2), (2, 3)]


def _err(u, norm):
    """Alg. 4 targets every coefficient (l1); Alg. 5 the maximal monomials of h (Thm. 4.7)."""
    keys = set(u) | set(TRUE) if norm == "l1" else MAXIMAL
    return max(abs(u.get(k, 0.0) - TRUE.get(k, 0.0)) for k in keys)


@pytest.mark.parametrize("norm", ["l1", "linf"])
def test_recovers_a_third_order_model_and_spends_rho(model_and_spins, norm):
    _, z = model_and_spins
    acc = Accountant(ZCDP(20.0))
    est = learn_binary_mrf(z, 3, lam=2.0, rho=20.0, norm=norm, max_steps=300, rng=1,
                           accountant=acc)  # fmt: skip
    assert acc.spent.rho == pytest.approx(20.0)  # l1: p x rho/p; linf: rho/2 + p x rho/(2p)
    assert _err(est.coefficients, norm) < 0.15
    ref = learn_binary_mrf(z, 3, lam=2.0, rho=None, norm=norm, max_steps=300)
    assert _err(ref.coefficients, norm) < 0.1 and ref.spent is None


def test_registered_learner_and_refusals(model_and_spins):
    mrf, z = model_and_spins
    fit = ZhangBinaryMRF(t=3, lam=2.0, max_steps=200).fit(((z + 1) / 2).astype(int), mrf)
    assert fit.model.cliques == mrf.cliques
    table = np.asarray(fit.model.potentials[("X2", "X3")])
    assert table[1, 1] == pytest.approx(-0.5, abs=0.1)
    chain = third_order_chain(4, 3, rng=0)
    with pytest.raises(DomainError):
        ZhangBinaryMRF().fit(chain.sample(10, rng=0), chain, budget=ZCDP(1.0))
    acc = Accountant(ZCDP(1.0))
    with pytest.raises(ModelTooLargeError):
        learn_binary_mrf(np.ones((4, 21)), 2, lam=1.0, rho=1.0, norm="linf", accountant=acc)
    assert acc.spent.rho == 0
