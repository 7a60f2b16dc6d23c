"""The learner contract and registry: every learner conforms, a new one needs no other edit."""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass

import pytest

import pgm_dp.learners as learners
from pgm_dp.cli import build_parser
from pgm_dp.experiments.compare import run_compare
from pgm_dp.learners import Fit, LearnerSpec, RecordLearner, ReleaseLearner


def test_every_registered_learner_follows_its_contract():
    for name in learners.available():
        spec = learners.get(name)
        learner = spec.make()
        params = inspect.signature(learner.fit).parameters
        if spec.kind == "release":
            assert isinstance(learner, ReleaseLearner)
            assert list(params)[:2] == ["release", "mrf"]
        else:
            assert isinstance(learner, RecordLearner)
            assert list(params)[:2] == ["data", "mrf"]
            for keyword in ("budget", "rng", "accountant"):
                assert params[keyword].kind is inspect.Parameter.KEYWORD_ONLY
        package = importlib.import_module(type(learner).__module__.rpartition(".")[0])
        assert getattr(package, type(learner).__name__) is type(learner)  # a public name


def test_public_names_are_reexported():
    for name in learners.__all__:
        assert hasattr(learners, name)
    assert learners.make("naive") == learners.NaiveMLE()


def test_unknown_learner_and_bad_specs_are_refused():
    with pytest.raises(ValueError, match="unknown learner 'nope'"):
        learners.get("nope")
    with pytest.raises(ValueError, match="kind"):
        LearnerSpec("x", learners.NaiveMLE, "both", "X", "x")
    with pytest.raises(ValueError, match="registered"):
        learners.register(LearnerSpec("naive", learners.NaiveMLE, "release", "N", "dup"))
    with pytest.raises(ValueError, match="unknown learner"):
        run_compare(T=4, k=2, N=100, learners=("nope",), progress=False, out_dir=None)


@dataclass(frozen=True)
class _Ridge:
    """A toy release learner: naive MLE with a heavy ridge."""

    def fit(self, release, mrf) -> Fit:
        return learners.NaiveMLE(l2=1e-2).fit(release, mrf)


@dataclass(frozen=True)
class _Prior:
    """A toy record learner that spends nothing and returns the uniform model."""

    def fit(self, data, mrf, *, budget=None, rng=None, accountant=None) -> Fit:
        return Fit(mrf.replace(None), info={"budget": budget})


@pytest.fixture
def toys():
    learners.register(LearnerSpec("toy", _Ridge, "release", "Toy ridge", "toy"))
    learners.register(LearnerSpec("uniform", _Prior, "records", "Uniform", "toy", budget=None))
    yield
    learners.unregister("toy")
    learners.unregister("uniform")


def test_a_registered_toy_learner_runs_in_compare_and_the_cli(toys, tmp_path):
    result = run_compare(
        T=4,
        k=2,
        N=500,
        epsilons=(1.0,),
        learners=("naive", "toy", "uniform"),
        progress=False,
        out_dir=tmp_path,
    )
    assert list(result.summary.columns) == ["naive", "toy", "uniform"]
    assert (result.runs.learner == "toy").sum() == 1
    assert (tmp_path / "compare_chain.png").exists()
    args = build_parser().parse_args(["compare", "--learners", "toy", "--N", "300"])
    assert args.learners == ["toy"]
