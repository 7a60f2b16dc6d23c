import warnings

import numpy as np
import pytest
from conftest import random_model

from pgm_dp import MarkovRandomField
from pgm_dp.compare.metrics import kl_divergence
from pgm_dp.models import third_order_chain

warnings.filterwarnings("ignore", category=FutureWarning)
pgmpy_models = pytest.importorskip("pgmpy.models")
from pgmpy.factors.discrete import DiscreteFactor, TabularCPD  # noqa: E402
from pgmpy.inference import BeliefPropagation  # noqa: E402


def _pgmpy_network(rng):
    net = pgmpy_models.DiscreteMarkovNetwork([("A", "B"), ("B", "C"), ("C", "A"), ("C", "D")])
    cards = {"A": 2, "B": 3, "C": 2, "D": 4}
    for u, v in [("A", "B"), ("B", "C"), ("C", "A"), ("C", "D")]:
        net.add_factors(
            DiscreteFactor([u, v], [cards[u], cards[v]], rng.uniform(0.1, 2, cards[u] * cards[v]))
        )
    return net


def test_marginals_equal_pgmpy_belief_propagation(rng):
    net = _pgmpy_network(rng)
    mrf = MarkovRandomField.from_pgmpy(net)
    bp = BeliefPropagation(net)
    bp.calibrate()
    for cl in [("A", "B"), ("C", "D"), ("B", "D"), ("A",)]:
        q = bp.query(list(cl), joint=True, show_progress=False)
        ref = q.values / q.values.sum()
        ref = np.transpose(ref, [list(q.variables).index(v) for v in cl])
        np.testing.assert_allclose(np.asarray(mrf.marginal(cl)), ref, atol=1e-10)


def test_round_trip_preserves_distribution(rng):
    mrf = random_model(rng, 5, 5)
    back = MarkovRandomField.from_pgmpy(mrf.to_pgmpy())
    assert back.domain == mrf.domain
    assert abs(kl_divergence(mrf, back)) < 1e-10
    chain = third_order_chain(6, 3, rng=1)
    assert abs(kl_divergence(chain, MarkovRandomField.from_pgmpy(chain.to_pgmpy()))) < 1e-10


def test_factor_graph_and_bayesian_network(rng):
    fg = pgmpy_models.FactorGraph()
    fg.add_nodes_from(["a", "b"])
    phi = DiscreteFactor(["a", "b"], [2, 2], [1.0, 2.0, 3.0, 4.0])
    fg.add_factors(phi)
    fg.add_nodes_from([phi])
    fg.add_edges_from([("a", phi), ("b", phi)])
    m = MarkovRandomField.from_pgmpy(fg)
    np.testing.assert_allclose(
        np.asarray(m.marginal(("a", "b"))), np.array([[1, 2], [3, 4]]) / 10, atol=1e-12
    )

    bn = pgmpy_models.DiscreteBayesianNetwork([("R", "S")])
    bn.add_cpds(
        TabularCPD("R", 2, [[0.3], [0.7]]),
        TabularCPD("S", 2, [[0.9, 0.2], [0.1, 0.8]], evidence=["R"], evidence_card=[2]),
    )
    m = MarkovRandomField.from_pgmpy(bn)
    assert float(m.log_partition()) == pytest.approx(0.0, abs=1e-12)  # CPDs are normalised
    np.testing.assert_allclose(
        np.asarray(m.marginal(("S",))), [0.3 * 0.9 + 0.7 * 0.2, 0.3 * 0.1 + 0.7 * 0.8]
    )


def test_unsupported_object():
    with pytest.raises(TypeError):
        MarkovRandomField.from_pgmpy(object())
