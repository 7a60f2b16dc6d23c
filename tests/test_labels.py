"""Categorical data end to end (issue #20): labelled domains, encoding by label everywhere
data are accepted, pgmpy state names, structure-only pgmpy models, pickling."""

import copy
import pickle

import numpy as np
import pandas as pd
import pytest
from pgmpy.factors.discrete import TabularCPD
from pgmpy.models import DiscreteBayesianNetwork, DiscreteMarkovNetwork
from pgmpy.sampling import BayesianModelSampling

from pgm_dp import (
    ApproxDP,
    DataValidationError,
    Domain,
    DomainError,
    MarkovRandomField,
    PureDP,
    release_marginals,
    sufficient_statistics,
)
from pgm_dp.compare.metrics import kl_divergence, log_likelihood
from pgm_dp.learners import PSGD

DOM = Domain.from_dict({"smoker": ["yes", "no"], "cough": ["no", "yes"], "age": 3})
CODES = np.array([[0, 1, 2], [1, 0, 0], [1, 1, 1], [0, 0, 2]] * 25)

# The Asia network (Lauritzen & Spiegelhalter 1988) as bnlearn ships it, states ['yes', 'no'];
# built here because pgmpy deprecates its offline example loader.
ASIA_CPDS = {
    ("asia",): [[0.01], [0.99]],
    ("smoke",): [[0.5], [0.5]],
    ("tub", "asia"): [[0.05, 0.01], [0.95, 0.99]],
    ("lung", "smoke"): [[0.1, 0.01], [0.9, 0.99]],
    ("bronc", "smoke"): [[0.6, 0.3], [0.4, 0.7]],
    ("either", "lung", "tub"): [[1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]],
    ("xray", "either"): [[0.98, 0.05], [0.02, 0.95]],
    ("dysp", "bronc", "either"): [[0.9, 0.8, 0.7, 0.1], [0.1, 0.2, 0.3, 0.9]],
}


def _asia() -> DiscreteBayesianNetwork:
    bn = DiscreteBayesianNetwork([(p, v) for v, *ps in ASIA_CPDS for p in ps])
    for (v, *ps), values in ASIA_CPDS.items():
        names = {x: ["yes", "no"] for x in (v, *ps)}
        bn.add_cpds(TabularCPD(v, 2, values, ps or None, [2] * len(ps) or None, names))
    return bn


def _labelled(kind: str) -> pd.DataFrame:
    df = DOM.decode(CODES)
    if kind == "str":
        return df.astype({"smoker": str, "cough": str})
    if kind == "reversed":  # categories in the opposite order: .cat.codes would be wrong
        return df.astype({"smoker": pd.CategoricalDtype(["no", "yes"])})
    return df  # category in the domain's order


@pytest.mark.parametrize("kind", ["str", "category", "reversed"])
def test_labelled_columns_encode_by_label(kind):
    np.testing.assert_array_equal(DOM.encode(_labelled(kind)), CODES)


@pytest.mark.parametrize("kind", ["str", "reversed"])
def test_release_learners_and_metrics_accept_labels(kind):
    df = _labelled(kind)
    mrf = MarkovRandomField(DOM, [("smoker", "cough"), ("cough", "age")])
    a = release_marginals(df, mrf, budget=PureDP(1.0), rng=0)
    b = release_marginals(CODES, mrf, budget=PureDP(1.0), rng=0)
    assert a == b
    assert log_likelihood(mrf, df) == log_likelihood(mrf, CODES)
    fa = PSGD(epochs=1).fit(df, mrf, budget=ApproxDP(1.0, 1e-3), rng=1)
    fb = PSGD(epochs=1).fit(CODES, mrf, budget=ApproxDP(1.0, 1e-3), rng=1)
    assert kl_divergence(fa.model, fb.model) == 0.0


def test_from_dataframe_keeps_labels_and_unknown_labels_are_errors():
    df = pd.DataFrame(
        {
            "s": ["b", "a", "b"],
            "c": pd.Categorical(["x", "x", "y"], categories=["y", "x"]),
            "f": [True, False, True],
            "n": [0, 3, 1],
        }
    )
    dom = Domain.from_dataframe(df)
    assert dom.labels == (("a", "b"), ("y", "x"), (False, True), None)
    assert dom.shape == (2, 2, 2, 4)
    np.testing.assert_array_equal(dom.encode(df), [[1, 1, 1, 0], [0, 1, 0, 3], [1, 0, 1, 1]])
    with pytest.raises(DataValidationError, match="variable 's' .* not one of"):
        dom.encode(df.assign(s=["a", "zz", "b"]))
    with pytest.raises(DataValidationError, match="missing value"):
        dom.encode(df.assign(s=["a", None, "b"]))
    with pytest.raises(DataValidationError, match="not strings"):  # unlabelled: no silent codes
        Domain(["s"], [2]).encode(df[["s"]])
    with pytest.raises(DomainError, match="not distinct"):
        Domain(["a"], [2], [("x", "x")])
    decoded = dom.decode(dom.encode(df))
    assert decoded.s.tolist() == df.s.tolist() and decoded.n.tolist() == df.n.tolist()


def test_stats_by_label_equal_stats_of_codes():
    df = _labelled("reversed")
    cl = [("smoker", "age"), ("cough",)]
    got, want = sufficient_statistics(df, cl, DOM), sufficient_statistics(CODES, cl, DOM)
    assert all(np.array_equal(got[c], want[c]) for c in want)


def test_asia_category_order_trap():
    """pgmpy's sampler gives strings whose sorted categories are ['no', 'yes'] while the CPDs
    say ['yes', 'no']: .cat.codes would give -inf log-likelihood; encoding by label is exact."""
    bn = _asia()
    mrf = MarkovRandomField.from_pgmpy(bn)
    assert mrf.domain.labels_of("asia") == ("yes", "no")
    df = BayesianModelSampling(bn).forward_sample(500, seed=0, show_progress=False)
    ll = mrf.log_prob(df)
    want = np.log([bn.get_state_probability(dict(r)) for _, r in df.head(20).iterrows()])
    np.testing.assert_allclose(ll[:20], want, rtol=1e-10)
    assert log_likelihood(mrf, df.astype("category")) == pytest.approx(ll.mean(), abs=1e-12)


def test_labels_survive_pgmpy_round_trip_and_json():
    sub = DOM.project(["smoker", "cough"])
    mrf = MarkovRandomField(sub, [("smoker", "cough")], [np.array([[0.0, 1.0], [2.0, 0.5]])])
    net = mrf.to_pgmpy()
    assert net.get_factors()[0].state_names["smoker"] == ["yes", "no"]
    back = MarkovRandomField.from_pgmpy(net)
    assert back.domain == sub and kl_divergence(mrf, back) == pytest.approx(0, abs=1e-12)
    rel = release_marginals(CODES[:, :2], mrf, budget=PureDP(1.0), rng=0)
    assert type(rel).from_json(rel.to_json()).domain == sub


def test_pgmpy_structure_without_factors():
    net = DiscreteMarkovNetwork([("A", "B"), ("B", "C"), ("A", "C"), ("C", "D")])
    with pytest.raises(DomainError, match="no factors .* pass domain="):
        MarkovRandomField.from_pgmpy(net)
    dom = Domain.from_dict({"A": ["x", "y"], "B": 2, "C": 3, "D": 2})
    mrf = MarkovRandomField.from_pgmpy(net, domain=dom)
    assert set(mrf.cliques) == {("A", "B", "C"), ("C", "D")}
    assert all(np.all(np.asarray(t) == 0) for t in mrf.log_potentials)
    bn = DiscreteBayesianNetwork([("A", "B"), ("C", "B")])
    fam = MarkovRandomField.from_pgmpy(bn, domain=dom.project(["A", "B", "C"]))
    assert {frozenset(c) for c in fam.cliques} == {frozenset("A"), frozenset("C"), frozenset("ABC")}


def test_pickle_and_deepcopy_of_a_model():
    mrf = MarkovRandomField.from_pgmpy(_asia())
    for other in (pickle.loads(pickle.dumps(mrf)), copy.deepcopy(mrf)):
        assert other.domain == mrf.domain and other.cliques == mrf.cliques
        assert all(
            np.array_equal(a, b)
            for a, b in zip(other.log_potentials, mrf.log_potentials, strict=True)
        )
    assert mrf.sample(5, rng=0, labels=True).asia.dtype == "category"
