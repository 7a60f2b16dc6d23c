"""The gauge projector (:mod:`pgm_dp.models.gauge`)."""

import numpy as np
import pytest

from pgm_dp import Domain, MarkovRandomField
from pgm_dp.models import third_order_chain
from pgm_dp.models.gauge import gauge_projector
from pgm_dp.tables import flatten_tables, unflatten_tables


def _mixed():
    dom = Domain(list("ABCD"), [2, 3, 4, 2])
    cliques = [("B", "A"), ("A", "C"), ("C", "B", "D"), ("D",), ("B", "D")]
    rng = np.random.default_rng(0)
    return MarkovRandomField(dom, cliques, [rng.normal(size=dom.sizes(c)) for c in cliques])


@pytest.mark.parametrize("mrf", [_mixed(), third_order_chain(6, 3, rng=0)])
def test_gauge_projection_is_orthogonal_and_keeps_the_distribution(mrf):
    shapes = [mrf.domain.sizes(c) for c in mrf.cliques]
    project = gauge_projector(mrf.domain, mrf.cliques)
    x = flatten_tables(mrf.log_potentials)
    y = np.random.default_rng(1).normal(size=x.size)
    px = project(x)
    np.testing.assert_allclose(project(px), px, atol=1e-12)
    assert abs(project(x) @ y - x @ project(y)) < 1e-10
    before, after = mrf.marginals(), mrf.replace(unflatten_tables(px, shapes)).marginals()
    for c in mrf.cliques:
        np.testing.assert_allclose(after[c], before[c], atol=1e-12)


def test_gauge_projection_removes_a_moved_function_and_constants():
    mrf = _mixed()
    project = gauge_projector(mrf.domain, mrf.cliques)
    f = np.array([0.3, -1.0, 2.0])  # a function of B moved from (B, A) to (B, D)
    tables = [np.zeros(mrf.domain.sizes(c)) for c in mrf.cliques]
    tables[0] = tables[0] + f[:, None]
    tables[4] = tables[4] - f[:, None]
    tables[2] = tables[2] + 5.0  # a constant
    np.testing.assert_allclose(project(flatten_tables(tables)), 0.0, atol=1e-12)
