import numpy as np
import pandas as pd
import pytest

from pgm_dp import DataValidationError, Domain, DomainError, sufficient_statistics

DOM = Domain(["A", "B"], [2, 3])


@pytest.mark.parametrize(
    "data, match",
    [
        (np.array([[0, 3]]), "outside its domain"),
        (np.array([[-1, 0]]), "outside its domain"),
        (np.array([[0.0, np.nan]]), "NaN"),
        (np.array([[0.5, 1.0]]), "non-integer"),
        (np.zeros((3, 3), dtype=int), "shape"),
        (np.zeros((0, 2), dtype=int), "empty"),
        (pd.DataFrame({"A": [0, 1]}), "lack variables"),
        (pd.DataFrame({"A": [0, 1], "B": ["x", "y"]}), "numeric"),
        (np.array(["a", "b"]), "shape"),
        (pd.DataFrame({"A": ["0", "1"], "B": ["1", "2"]}), "not strings"),  # numeric strings
        (pd.DataFrame([[0, 1, 1]], columns=["A", "B", "B"]), "more than one column"),
        ([[0, 1], [0]], "rectangular"),  # ragged rows
        (np.array([[0, 2**64 - 1]], dtype=np.uint64), "variable 'B' .* outside"),
        (np.array([[0.0, 1e300]]), "variable 'B' .* outside"),
    ],
)
def test_bad_data_raise_clear_value_errors(data, match):
    with pytest.raises(DataValidationError, match=match) as info:
        DOM.encode(data)
    assert isinstance(info.value, ValueError)


def test_encode_reorders_columns_and_does_not_mutate():
    df = pd.DataFrame({"extra": [9, 9], "B": [2, 1], "A": [1, 0]})
    before = df.copy()
    codes = DOM.encode(df)
    np.testing.assert_array_equal(codes, [[1, 2], [0, 1]])
    pd.testing.assert_frame_equal(df, before)
    arr = np.array([[1.0, 2.0]])
    DOM.encode(arr)[0, 0] = 0
    assert arr[0, 0] == 1.0


def test_unknown_variable_in_clique():
    with pytest.raises(DomainError, match="unknown variable"):
        sufficient_statistics(np.array([[0, 1]]), [("A", "Z")], DOM)


def test_domain_helpers():
    dom = Domain(["A", "B", "C"], [2, 3, 4])
    assert dom.size() == 24 and dom.size(["C", "A"]) == 8
    assert dom.project(["C", "A"]).attributes == ("A", "C")
    assert dom.canonical(["C", "A"]) == ("A", "C")
    assert "B" in dom and len(dom) == 3
    with pytest.raises(DomainError):
        Domain(["A", "A"], [2, 2])
    with pytest.raises(DomainError):
        Domain(["A"], [2, 3])
    for sizes in ([float("inf")], [None], [2.5], [0]):
        with pytest.raises(DomainError, match="positive integer"):
            Domain(["A"], sizes)
    with pytest.raises(DomainError, match="at least one"):
        Domain([], [])


def test_sufficient_statistics_counts_and_weights(rng):
    dom = Domain(["A", "B", "C"], [2, 3, 4])
    data = np.column_stack([rng.integers(0, k, 500) for k in dom.shape])
    tabs = sufficient_statistics(data, [("C", "A"), ("B",)], dom)
    ref = np.zeros((4, 2), dtype=int)
    for a, _, c in data:
        ref[c, a] += 1
    np.testing.assert_array_equal(tabs[("C", "A")], ref)
    assert tabs[("B",)].sum() == 500
    w = np.full(500, 0.5)
    wt = sufficient_statistics(data, [("C", "A")], dom, weights=w)
    np.testing.assert_allclose(wt[("C", "A")], ref * 0.5)
    with pytest.raises(DataValidationError):
        sufficient_statistics(data, [("A",)], dom, weights=-w)
    with pytest.raises(DataValidationError):
        sufficient_statistics(data, [("A",)], dom, weights=w[:10])


def test_statistics_in_chunks_equal_one_pass_and_report_the_variable():
    from pgm_dp.stats import count_columns

    rng = np.random.default_rng(3)
    dom = Domain(["A", "B", "C"], [3, 4, 2])
    codes = rng.integers(0, [3, 4, 2], size=(1001, 3))
    cols = [codes[:, j] for j in range(3)]
    cliques = (("A", "B"), ("B", "C"), ("A", "B", "C"))
    one = count_columns(cols, cliques, dom, chunk_rows=10_000)
    many = count_columns(cols, cliques, dom, chunk_rows=7)
    assert all(np.array_equal(one[c], many[c]) for c in cliques)
    assert one[("A", "B", "C")].sum() == 1001
    codes[999, 1] = 4
    with pytest.raises(DataValidationError, match="'B' has values in the data outside") as err:
        count_columns([codes[:, j] for j in range(3)], cliques, dom, chunk_rows=7)
    assert "999" not in str(err.value)  # no record (nor value) of the data is named
