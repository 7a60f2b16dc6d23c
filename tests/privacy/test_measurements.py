"""The one measurement type, its flat arrays and its one check against a model
(:mod:`pgm_dp.privacy.measurements`)."""

import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pgm_dp import ZCDP, Domain, DomainError, PureDP, io, release_marginals
from pgm_dp.privacy import Measurements, NoisyMarginals
from pgm_dp.privacy.measurements import flat_release

DATA = pathlib.Path(__file__).parent / "data"


def _release(mechanism, budget):
    dom = Domain(["A", "B", "C"], [2, 3, 2])
    data = np.random.default_rng(0).integers(0, 2, size=(50, 3))
    cliques = [("A", "B"), ("C",), ("B", "C")]
    return release_marginals(data, cliques, dom, budget=budget, mechanism=mechanism, rng=1)


@pytest.mark.parametrize(
    "mechanism, budget", [("discrete_laplace", PureDP(1.0)), ("gaussian", ZCDP(0.5))]
)
def test_in_any_clique_order(mechanism, budget):
    rel = _release(mechanism, budget)
    order = (("B", "C"), ("A", "B"), ("C",))
    view = rel.in_order(order, rel.domain)
    assert rel.in_order(order) == view and rel.in_order(order) is not view  # no cache
    assert isinstance(view, Measurements) and NoisyMarginals is Measurements
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
    assert flat_release(rel, order) == view
    assert rel.in_order().cliques == rel.cliques
    assert rel.in_order() is rel.in_order(rel.cliques)
    assert rel == type(rel).from_json(rel.to_json())  # the view is not part of the release


def test_one_check_of_a_release_against_a_model():
    rel = _release("discrete_laplace", PureDP(1.0))
    with pytest.raises(DomainError, match=r"only in release \[\('B', 'C'\)\]"):
        rel.in_order((("A", "B"), ("C",)))
    with pytest.raises(DomainError, match="only in model"):
        rel.in_order((("A", "B"), ("C",), ("B", "C"), ("A",)))
    with pytest.raises(DomainError, match="each once"):
        rel.in_order((("A", "B"), ("C",), ("B", "C"), ("C",)))
    with pytest.raises(DomainError, match="release domain"):
        rel.in_order(rel.cliques, Domain(["A", "B", "C"], [2, 3, 3]))
    negative = Measurements(**{**_fields(rel), "total": -2.0})
    with pytest.raises(DomainError, match="total N must be positive"):
        negative.in_order()


def _fields(m):
    return {f: getattr(m, f) for f in m.__dataclass_fields__}


def test_a_traced_release_keeps_every_field():
    rel = _release("gaussian", ZCDP(0.5))
    seen = {}

    @jax.jit
    def weighted(r):
        seen.update(kinds=r.kinds, total=r.total, shapes=[r.y.shape, r.scales.shape])
        return jnp.sum(r.y / r.variance) + jnp.sum(r.scales) + jnp.sum(jnp.where(r.laplace, 1, 0))

    want = np.sum(rel.y / rel.variance) + np.sum(rel.scales)
    assert float(weighted(rel)) == pytest.approx(float(want))
    assert seen == {"kinds": rel.kinds, "total": rel.total, "shapes": [(14,), (3,)]}


def test_the_flat_arrays_are_the_storage_and_the_tables_views():
    rel = _release("gaussian", ZCDP(0.5))
    for i, c in enumerate(rel.cliques):
        table = rel.noisy[c]
        assert np.shares_memory(table, rel.y) and not table.flags.writeable
        np.testing.assert_array_equal(table.ravel(), rel.y[rel.offsets[i] : rel.offsets[i + 1]])
    with pytest.raises(AttributeError):
        rel.total = 3.0  # frozen


def test_a_release_is_a_pytree_with_static_structure():
    rel = _release("discrete_laplace", PureDP(1.0))
    leaves, treedef = jax.tree_util.tree_flatten(rel)
    assert [leaf.shape for leaf in leaves] == [(14,), (14,), (14,), (3,)]
    back = jax.tree_util.tree_unflatten(treedef, leaves)
    assert back == rel and back.noisy[("C",)].dtype == np.int64

    @jax.jit
    def weighted(r):
        return jnp.sum(r.y / r.variance)

    assert float(weighted(rel)) == pytest.approx(float(np.sum(rel.y / rel.variance)))


@pytest.mark.parametrize("name", ["discrete_laplace", "gaussian", "aim"])
def test_files_written_by_the_earlier_release_type_still_load(name, tmp_path):
    path = DATA / f"release_v1_{name}.json"
    rel = io.load(path)
    assert isinstance(rel, Measurements)
    assert rel.to_json() == path.read_text()  # the same document, byte for byte
    assert io.load(io.save(rel, tmp_path / "again.json")) == rel


def test_repeated_cliques_are_kept_apart_and_their_views_merged(tmp_path):
    first = _release("gaussian", ZCDP(0.5))
    again = _release("gaussian", ZCDP(2.0))
    both = first.append(again)
    assert both.cliques == first.cliques + again.cliques and both.repeated
    assert np.array_equal(both.y, np.concatenate([first.y, again.y]))
    assert both.budget == ZCDP(2.5) and both.total_source == "estimate"
    c = ("A", "B")
    w1, w2 = 1 / first.noise[c].variance, 1 / again.noise[c].variance
    want = (w1 * first.noisy[c] + w2 * again.noisy[c]) / (w1 + w2)
    np.testing.assert_allclose(both.noisy[c], want, rtol=1e-14)
    assert both.noise[c].variance == pytest.approx(1 / (w1 + w2), rel=1e-14)
    merged = both.merged()
    assert merged.cliques == first.cliques and not merged.repeated
    assert all(np.array_equal(merged.noisy[q], both.noisy[q]) for q in merged.cliques)
    assert flat_release(both, list(reversed(first.cliques))).cliques == tuple(
        reversed(first.cliques)
    )
    assert first.merged() is first
    assert io.load(io.save(both, tmp_path / "both.json")) == both  # each measurement kept
    with pytest.raises(ValueError, match="repeated clique"):
        Measurements.from_tables(
            both.domain, both.cliques, both.noisy, both.noise, **_provenance(both)
        )


def _provenance(m):
    names = ("budget", "mechanism", "sensitivity", "total", "total_source", "total_noise")
    return {f: getattr(m, f) for f in names}


def test_other_tables_keep_the_provenance():
    rel = _release("discrete_laplace", PureDP(1.0))
    tables = {c: np.zeros_like(t) for c, t in rel.noisy.items()}
    other = rel.with_tables(tables)
    assert other.cliques == rel.cliques and other.dtypes == rel.dtypes
    assert not other.y.any() and np.array_equal(other.scale, rel.scale)
    assert (other.budget, other.total, other.mechanism) == (rel.budget, rel.total, rel.mechanism)
    fewer = rel.with_tables({("C",): tables[("C",)]}, cliques=[("C",)], total=7.0)
    assert fewer.cliques == (("C",),) and fewer.total == 7.0 and fewer.offsets.tolist() == [0, 2]
    with pytest.raises(ValueError, match=r"shape \(6,\), not \(2, 3\)"):
        rel.with_tables({**tables, ("A", "B"): np.zeros(6)})
