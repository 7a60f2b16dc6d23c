"""CGM-EM as problem + state: ``EMProblem.build`` is the only reader of the release, and the
compiled programs map ``(problem, state)`` pytrees to the next state."""

import jax
import numpy as np

from pgm_dp.inference.backend import get_backend
from pgm_dp.learners.cgm import CGMEM
from pgm_dp.learners.cgm.problem import EMProblem, EMState, em_init
from pgm_dp.models import third_order_chain
from pgm_dp.privacy import PureDP, release_marginals


def _release():
    truth = third_order_chain(4, 2, rng=0)
    release = release_marginals(truth.sample(2000, rng=1), truth, budget=PureDP(1.0), rng=2)
    return truth, release


class _Sealed:
    """A release that refuses every read once ``sealed``."""

    def __init__(self, release):
        self.__dict__.update(_release=release, sealed=False)

    def __getattr__(self, name):
        assert not self.__dict__["sealed"], f"release.{name} read after EMProblem.build"
        return getattr(self.__dict__["_release"], name)


def test_the_release_is_read_only_by_build(monkeypatch):
    truth, release = _release()
    sealed = _Sealed(release)
    build = EMProblem.build.__func__

    def sealing(cls, *args, **kwargs):
        problem = build(cls, *args, **kwargs)
        sealed.__dict__["sealed"] = True
        return problem

    monkeypatch.setattr(EMProblem, "build", classmethod(sealing))
    fit = CGMEM().fit(sealed, truth)
    assert fit.info["converged"] and fit.info["budget"] == release.budget
    reference = CGMEM().fit(release, truth)
    assert fit.info["objective"] == reference.info["objective"]


def test_the_compiled_run_maps_problem_and_state_to_the_next_state():
    truth, release = _release()
    learner, backend = CGMEM(), get_backend("junction_tree")
    problem = EMProblem.build(release, truth, learner, backend)
    programs = learner.programs(problem, truth, backend)
    start, n0 = learner._initial(problem, truth, backend)
    theta = np.concatenate([np.ravel(t) for t in start.log_potentials])
    problem = problem.conditioned(np.asarray(n0) / float(problem.total))
    state = em_init(theta, n0, learner.nlbp_anderson, learner.damping)
    leaves = jax.tree_util.tree_leaves((problem, state))
    assert all(isinstance(x, (jax.Array, np.ndarray, np.generic)) for x in leaves)
    state = programs.run(problem, state)  # inexact E-steps, as the fit's first phase
    assert isinstance(state, EMState) and int(state.iterations) > 0
    fit = learner.fit(release, truth)  # converged in that phase: the same iterate
    assert fit.info["iterations"] == int(state.iterations)
    x = np.concatenate([np.ravel(t) for t in fit.model.log_potentials])
    np.testing.assert_allclose(np.asarray(state.x), x, rtol=1e-12, atol=1e-12)
