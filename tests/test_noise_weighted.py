"""Private-PGM's mirror descent (``pgm_dp.select.mle.mirror_descent``): it fits consistent
tables exactly and weighs inconsistent ones by their noise."""

import numpy as np

from pgm_dp.domain import Domain
from pgm_dp.select.mle import mirror_descent


def _probs(tables, cliques, dom):
    """Marginals of a model given by log tables (brute force over the joint)."""
    joint = np.zeros(dom.shape)
    for c, t in zip(cliques, tables, strict=True):
        axes = [dom.attributes.index(v) for v in c]
        shape = [1] * len(dom.shape)
        for a, k in zip(axes, t.shape, strict=True):
            shape[a] = k
        joint = joint + np.asarray(t).reshape(shape)
    p = np.exp(joint - joint.max())
    return p / p.sum()


def test_consistent_tables_are_fitted():
    dom = Domain(["a", "b", "c"], [2, 3, 2])
    rng = np.random.default_rng(0)
    truth = rng.dirichlet(np.ones(12)).reshape(dom.shape)
    cliques = [("a", "b"), ("b", "c")]
    y = [truth.sum(axis=2) * 1000, truth.sum(axis=0) * 1000]
    tables, info = mirror_descent(dom, cliques, y, [1.0, 1.0], 1000.0, iters=2000)
    p = _probs(tables, cliques, dom)
    np.testing.assert_allclose(p.sum(axis=2) * 1000, y[0], atol=0.05)
    np.testing.assert_allclose(p.sum(axis=0) * 1000, y[1], atol=0.05)
    assert info["loss"] < 1e-3 * info["initial_loss"]


def test_the_less_noisy_table_counts_more():
    dom = Domain(["a", "b"], [2, 2])
    pair = np.array([[300.0, 200.0], [250.0, 250.0]])  # a's margin: 500, 500
    one = np.array([600.0, 400.0])  # disagrees
    cliques = [("a",), ("a", "b")]
    for sd_one, sd_pair, near in ((1.0, 30.0, one), (30.0, 1.0, pair.sum(axis=1))):
        tables, _ = mirror_descent(dom, cliques, [one, pair], [sd_one, sd_pair], 1000.0,
                                   iters=3000)  # fmt: skip
        a = _probs(tables, cliques, dom).sum(axis=1) * 1000
        assert np.abs(a - near).max() < 10
