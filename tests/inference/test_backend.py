"""Inference backends (:mod:`pgm_dp.inference.backend`): chosen by value, registered by name,
and a new one (brute-force enumeration) serves the model and CGM-EM unchanged."""

from __future__ import annotations

import dataclasses
import importlib.metadata
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import brute_log_z, brute_marginal

import pgm_dp.inference.backend as backend_module
from pgm_dp import Domain, MarkovRandomField, PureDP, release_marginals
from pgm_dp.inference import (
    TRW,
    Backend,
    JunctionTreeBackend,
    LoopyBP,
    available_backends,
    get_backend,
    register_backend,
    unregister_backend,
)
from pgm_dp.inference.tables import concat_tables
from pgm_dp.learners import CGMEM
from pgm_dp.learners.cgm.problem import EMProblem
from pgm_dp.tables import table_layout


@dataclasses.dataclass(frozen=True)
class BruteForce:
    """A toy backend: enumerate every joint state (tiny models only)."""

    name: ClassVar[str] = "brute_force"
    exact: ClassVar[bool] = True

    def counting_numbers(self, domain, cliques):
        return None

    def program(self, domain, cliques, max_cells=None):
        layout = table_layout(domain, tuple(cliques))

        def run(flat):  # the flat layout of every backend program
            tables = layout.unflatten(flat)
            logp = jnp.zeros(domain.shape)
            for c, t in zip(cliques, tables, strict=True):
                axes = [domain.index(v) for v in c]
                order = np.argsort(axes)
                shape = [domain.shape[a] if a in axes else 1 for a in range(len(domain))]
                logp = logp + jnp.reshape(jnp.transpose(t, order), shape)
            log_z = jax.nn.logsumexp(logp)
            p = jnp.exp(logp - log_z)
            margs = []
            for c in cliques:
                axes = [domain.index(v) for v in c]
                m = jnp.sum(p, axis=tuple(a for a in range(len(domain)) if a not in axes))
                margs.append(jnp.transpose(m, np.argsort(np.argsort(axes))))
            return concat_tables(margs), log_z, jnp.asarray(True)

        return run

    def warm_start(self, domain, cliques):
        return ()

    def marginals(self, model):
        layout = table_layout(model.domain, tuple(model.cliques))
        run = self.program(model.domain, model.cliques)
        margs, _, _ = run(concat_tables(model.log_potentials))
        return tuple(np.asarray(m) for m in layout.unflatten(margs))

    def log_partition(self, model):
        return float(
            self.program(model.domain, model.cliques)(concat_tables(model.log_potentials))[1]
        )


@pytest.fixture
def brute_force():
    register_backend("brute_force", BruteForce)
    yield BruteForce()
    unregister_backend("brute_force")


def _model(rng):
    dom = Domain(["A", "B", "C", "D"], [2, 3, 2, 2])
    cliques = [("B", "A"), ("B", "C"), ("C", "D", "A")]
    return MarkovRandomField(dom, cliques, [rng.normal(size=dom.sizes(c)) for c in cliques])


def test_a_registered_backend_serves_the_model_by_name_and_by_value(brute_force, rng):
    mrf = _model(rng)
    assert isinstance(brute_force, Backend) and "brute_force" in available_backends()
    for method in ("brute_force", brute_force):
        margs = mrf.marginals(method=method)
        for c in mrf.cliques:
            np.testing.assert_allclose(margs[c], brute_marginal(mrf, c), atol=1e-12)
        assert abs(mrf.log_partition(method) - brute_log_z(mrf)) < 1e-12


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_cgm_em_runs_on_a_registered_backend(brute_force):
    rng = np.random.default_rng(3)
    truth = _model(rng)
    release = release_marginals(truth.sample(3000, rng=1), truth, budget=PureDP(1.0), rng=2)
    fit = CGMEM(inference=brute_force).fit(release, truth)
    reference = CGMEM().fit(release, truth)  # the junction tree
    assert fit.info["converged"] and reference.info["converged"]
    mine, theirs = fit.model.marginals(), reference.model.marginals()
    for c in truth.cliques:
        np.testing.assert_allclose(mine[c], theirs[c], atol=1e-6)
    learner = CGMEM(inference="brute_force")
    problem = EMProblem.build(release, truth, learner, get_backend("brute_force"))
    assert problem.estep in ("nlbp", "newton")  # exact: Newton allowed


def test_builtin_backends_are_values_with_their_options():
    assert get_backend("junction_tree") == JunctionTreeBackend()
    assert get_backend("loopy_bp") == LoopyBP() != TRW()
    assert hash(get_backend("trw_bp")) == hash(TRW())  # compiled programs are cached by it
    assert get_backend("loopy_bp", damping=0.2) == LoopyBP(damping=0.2)
    assert get_backend(LoopyBP(), tol=1e-6).tol == 1e-6
    assert (JunctionTreeBackend.exact, LoopyBP.exact, TRW.exact) == (True, False, False)
    assert TRW().counting_numbers(*_structure()) is not None
    assert LoopyBP().counting_numbers(*_structure()) is None


def _structure():
    dom = Domain(list("ABC"), [2, 2, 2])
    return dom, (("A", "B"), ("B", "C"), ("A", "C"))


@pytest.mark.parametrize(
    "method, options",
    [("no_such_method", {}), ("loopy_bp", {"no_such_option": 1}), (object(), {})],
)
def test_bad_backends_are_refused(method, options, rng):
    with pytest.raises(ValueError):
        get_backend(method, **options)
    with pytest.raises(ValueError):
        _model(rng).marginals(method, **options)
    with pytest.raises(ValueError):
        register_backend("not a name", LoopyBP)
    with pytest.raises(ValueError):
        register_backend("loopy_bp", LoopyBP)  # taken


def test_a_mutable_backend_is_refused():
    class Mutable(BruteForce):  # unhashable: its compiled programs could not be cached
        __hash__ = None

    with pytest.raises(ValueError, match="hashable"):
        get_backend(Mutable())


def test_installed_packages_add_backends_by_entry_point(monkeypatch, rng):
    ep = importlib.metadata.EntryPoint(
        "plugin_bp", "pgm_dp.inference.backend:LoopyBP", backend_module.ENTRY_POINT_GROUP
    )
    seen = []

    def entry_points(group):
        seen.append(group)
        return [ep] if group == backend_module.ENTRY_POINT_GROUP else []

    import pgm_dp.plugins

    monkeypatch.setattr(pgm_dp.plugins, "entry_points", entry_points)  # the one loader
    monkeypatch.setattr(backend_module, "_PLUGINS_READ", False)
    try:
        assert get_backend("plugin_bp") == LoopyBP()
        mrf = _model(rng)
        assert abs(mrf.log_partition("plugin_bp") - mrf.log_partition("loopy_bp")) == 0.0
        get_backend("plugin_bp")
        assert seen == [backend_module.ENTRY_POINT_GROUP]  # read once
    finally:
        unregister_backend("plugin_bp")
