"""The flat table layout (:mod:`pgm_dp.tables`)."""

import jax
import numpy as np

from pgm_dp import Domain
from pgm_dp.inference.tables import concat_tables
from pgm_dp.tables import TableLayout, flatten_tables, table_layout, table_offsets, unflatten_tables


def test_flatten_and_unflatten_are_inverse_on_numpy_and_jax():
    rng = np.random.default_rng(0)
    tables = [rng.normal(size=(2, 3)), rng.normal(size=(4,)), rng.normal(size=(1, 2, 2))]
    shapes = [t.shape for t in tables]
    flat = flatten_tables(tables)
    assert flat.dtype == np.float64 and flat.shape == (6 + 4 + 4,)
    for a, b in zip(unflatten_tables(flat, shapes), tables, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(np.asarray(concat_tables(tables)), flat)
    back = jax.jit(lambda x: concat_tables(unflatten_tables(x, shapes)))(flat)
    np.testing.assert_array_equal(np.asarray(back), flat)


def test_layout_of_a_structure():
    dom = Domain(["A", "B", "C"], [2, 3, 4])
    layout = table_layout(dom, (("A", "B"), ("C",), ("C", "A")))
    assert layout is table_layout(dom, (("A", "B"), ("C",), ("C", "A")))  # cached
    assert layout.shapes == ((2, 3), (4,), (4, 2))
    assert layout.offsets.tolist() == [0, 6, 10, 18] and layout.size == 18
    assert layout.per_cell([1.0, 2.0, 3.0]).tolist() == [1.0] * 6 + [2.0] * 4 + [3.0] * 8
    assert table_offsets([]).tolist() == [0]
    assert TableLayout(((2,),)).unflatten(np.arange(2.0))[0].tolist() == [0.0, 1.0]
