"""Every registered learner returns what the contract (:mod:`pgm_dp.learners.base`) says:
a model of ``mrf``'s domain on ``mrf``'s cliques, unless it declares that it selects the
structure."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

import numpy as np
import pytest

from pgm_dp import ZCDP, ApproxDP, Domain, DomainError, MarkovRandomField, PureDP
from pgm_dp.learners import Fit, available, get
from pgm_dp.learners.base import check_fit, selects_structure
from pgm_dp.privacy import release_marginals

# Options that keep each fit to a second or so (the contract does not depend on them).
FAST = {
    "cgm": {"max_iters": 20},
    "psgd": {"epochs": 0.5},
    "mbi": {"iters": (50,)},
    "bayes": {"method": "laplace", "num_samples": 20},  # NUTS: tests/bayes
    "zhang_structure": {"steps": 20, "blocks": 8},
    **{
        f"zhang_{n}{s}": {"max_steps": 30}
        for n in ("ising", "pairwise", "tmrf")
        for s in ("", "_np")
    },
}
STRUCTURE_SELECTING = {"pmw", "zhang_structure"}


def _truth() -> MarkovRandomField:
    """Binary variables with fields and a chain of edges: every learner's kind of model."""
    names = ["A", "B", "C", "D"]
    cliques = [(v,) for v in names] + list(zip(names, names[1:], strict=False))
    rng = np.random.default_rng(0)
    dom = Domain(names, [2] * 4)
    return MarkovRandomField(dom, cliques, [rng.normal(size=dom.sizes(c)) for c in cliques])


def _record_fit(learner, data, mrf):
    """The fit under the first budget type the learner takes (it refuses the others before
    spending anything)."""
    for budget in (None, ZCDP(0.5), ApproxDP(1.0, 1e-3)):
        try:
            return learner.fit(data, mrf, budget=budget, rng=0)
        except (TypeError, ValueError):
            continue
    raise AssertionError(f"{learner!r} took none of the budgets")


@pytest.mark.filterwarnings("ignore::pgm_dp.ConvergenceWarning")
@pytest.mark.filterwarnings("ignore:JAX persistent compilation cache:UserWarning")
@pytest.mark.parametrize(  # the posterior's NUTS compile: the second tier (#38)
    "name", [pytest.param(n, marks=pytest.mark.slow) if n == "bayes" else n for n in available()]
)
def test_every_registered_learner_keeps_its_declared_contract(name):
    spec = get(name)
    if name == "mbi" and importlib.util.find_spec("mbi") is None:
        pytest.skip("mbi (the bench extra) is not installed")
    learner = spec.make(**FAST.get(name, {}))
    assert selects_structure(learner) == (name in STRUCTURE_SELECTING)
    mrf = _truth()
    data = mrf.sample(600, rng=1)
    if spec.kind == "release":
        release = release_marginals(data, mrf, budget=PureDP(1.0), rng=2)
        fit = learner.fit(release, mrf)
    else:
        fit = _record_fit(learner, data, mrf)
    check_fit(learner, fit, mrf)
    if not selects_structure(learner):
        assert fit.model.cliques == mrf.cliques


def test_zhang_learners_take_a_domain_for_the_structure():
    mrf = _truth()
    data = mrf.sample(600, rng=1)
    for name in ("zhang_ising_np", "pmw"):
        learner = get(name).make()
        fit = _record_fit(learner, data, mrf.domain)
        check_fit(learner, fit, mrf.domain)


def test_a_learner_breaking_the_contract_is_caught():
    mrf = _truth()

    @dataclass(frozen=True)
    class Shrinking:  # drops a clique without declaring it
        def fit(self, release, mrf):
            return Fit(MarkovRandomField(mrf.domain, mrf.cliques[:-1]))

    fit = Shrinking().fit(None, mrf)
    with pytest.raises(DomainError, match="selects_structure"):
        check_fit(Shrinking(), fit, mrf)
    other = MarkovRandomField(Domain(["A", "B", "C", "D"], [2, 2, 2, 3]), [("A",)])
    with pytest.raises(DomainError, match="domain"):
        check_fit(Shrinking(), Fit(other), mrf)
