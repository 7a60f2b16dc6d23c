"""A release's flat view (:mod:`pgm_dp.privacy.measurements`)."""

import numpy as np
import pytest

from pgm_dp import ZCDP, Domain, DomainError, PureDP, release_marginals
from pgm_dp.privacy.measurements import flat_release


def _release(mechanism, budget):
    dom = Domain(["A", "B", "C"], [2, 3, 2])
    data = np.random.default_rng(0).integers(0, 2, size=(50, 3))
    cliques = [("A", "B"), ("C",), ("B", "C")]
    return release_marginals(data, cliques, dom, budget=budget, mechanism=mechanism, rng=1)


@pytest.mark.parametrize(
    "mechanism, budget", [("discrete_laplace", PureDP(1.0)), ("gaussian", ZCDP(0.5))]
)
def test_flat_view_in_any_clique_order(mechanism, budget):
    rel = _release(mechanism, budget)
    order = (("B", "C"), ("A", "B"), ("C",))
    view = flat_release(rel, order)
    assert flat_release(rel, order) is view  # computed once
    assert view.offsets.tolist() == [0, 6, 12, 14] and view.cliques == order
    for c, t in zip(order, view.tables(), strict=True):
        np.testing.assert_array_equal(t, rel.noisy[c])
        assert t.dtype == np.float64
    for i, c in enumerate(order):
        cells = slice(view.offsets[i], view.offsets[i + 1])
        assert np.all(view.scale[cells] == rel.noise[c].scale)
        assert view.scales[i] == rel.noise[c].scale
        assert np.all(view.variance[cells] == rel.noise[c].variance)
        assert np.all(view.laplace[cells] == rel.noise[c].is_laplace)
    assert view.kinds == (mechanism,) * 3 and view.total == rel.total
    assert not view.y.flags.writeable
    assert flat_release(rel).cliques == rel.cliques
    assert flat_release(rel) is flat_release(rel, rel.cliques)
    assert rel == type(rel).from_json(rel.to_json())  # the view is not part of the release


def test_other_cliques_are_refused():
    rel = _release("discrete_laplace", PureDP(1.0))
    with pytest.raises(DomainError):
        flat_release(rel, (("A", "B"), ("C",)))
