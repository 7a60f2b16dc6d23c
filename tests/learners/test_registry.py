"""The learner contract and registry: every learner conforms, a new one needs no other edit
(registered in the program or installed as a plugin through the ``pgm_dp.learners`` entry
points), and the registry is the one list of learners the command line accepts."""

from __future__ import annotations

import importlib
import inspect
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

import pgm_dp.learners as learners
import pgm_dp.learners.registry as registry
from pgm_dp.cli import build_parser, main
from pgm_dp.compare.graphs import budget_for, columns_of, run_compare
from pgm_dp.learners import Fit, LearnerSpec, RecordLearner, ReleaseLearner
from pgm_dp.plugins import PluginWarning, load_plugins
from pgm_dp.privacy import ApproxDP, PureDP

REPO = Path(__file__).resolve().parents[2]


def test_every_registered_learner_follows_its_contract():
    for name in learners.available():
        spec = learners.get(name)
        try:
            learner = spec.make()
        except ImportError:  # an optional dependency (mbi: the bench extra) is missing
            assert name == "mbi", name
            continue
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
    with pytest.raises(ValueError, match="module:attribute"):
        LearnerSpec("x", "not a reference", "release", "X", "x")
    with pytest.raises(ValueError, match="unknown learner"):
        run_compare(T=4, k=2, N=100, learners=("nope",), progress=False, out_dir=None)


def test_an_entry_declares_its_budget_type_and_the_comparison_its_amount():
    fields = set(LearnerSpec.__dataclass_fields__)
    assert fields == {"name", "factory", "kind", "label", "description", "private", "budget"}
    assert learners.get("psgd").budget == "ApproxDP" and learners.get("cgm").budget == "PureDP"
    assert learners.get("zhang_ising").budget == "ZCDP"
    for name in learners.available():
        spec = learners.get(name)
        got = budget_for(spec, 1.0, 1000)
        assert (got is None) == (not spec.private)
        assert got is None or type(got).__name__ == spec.budget, name
    with pytest.raises(ValueError, match="budget must be one of"):
        LearnerSpec("x", _Ridge, "release", "X", "x", budget="RenyiDP")
    assert learners.labels()["cgm"] == "CGM" and "mbi300" not in learners.labels()
    assert budget_for(learners.get("cgm"), 1.0, 1000) == PureDP(1.0)
    assert budget_for(learners.get("psgd"), 1.0, 1000) == ApproxDP(1.0, 1e-3)
    assert budget_for(learners.get("nonprivate"), 1.0, 1000) is None
    assert list(columns_of(learners.get("mbi"))) == ["mbi300", "mbi1000", "mbi3000"]


def test_a_learner_listed_by_reference_is_imported_on_first_use():
    spec = learners.get("bayes")  # pgm_dp.bayes (NumPyro) is a layer above the registry
    assert spec.factory == "pgm_dp.bayes:PosteriorMean" and spec.kind == "release"
    assert type(spec.make()).__name__ == "PosteriorMean"


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
    learners.register(LearnerSpec("uniform", _Prior, "records", "Uniform", "toy", private=False))
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
    out = str(tmp_path / "cli")
    argv = ["compare", "--T", "4", "--k", "2", "--N", "300", "--eps", "1", "--out", out]
    assert main([*argv, "--learners", "naive", "toy", "uniform", "--no-plot"]) == 0


def _dist_info(site: Path, name: str, entry_points: str) -> None:
    """A minimal installed distribution: its metadata and entry points."""
    info = site / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)


@pytest.fixture
def fresh_plugins(monkeypatch):
    """The registry as before its first look-up (plugins not yet loaded); restored after."""
    saved = dict(registry._REGISTRY)
    monkeypatch.setattr(registry, "_PLUGINS_LOADED", False)
    yield
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved)


def test_plugins_load_lazily_and_a_broken_one_only_warns(tmp_path, monkeypatch, fresh_plugins):
    (tmp_path / "good_plugin.py").write_text(
        textwrap.dedent(
            """
            from pgm_dp.learners import LearnerSpec, NaiveMLE

            def spec():
                return LearnerSpec("good", NaiveMLE, "release", "Good", "a plugin")
            """
        )
    )
    group = "[pgm_dp.learners]\n"
    _dist_info(tmp_path, "good_plugin", group + "good = good_plugin:spec\n")
    _dist_info(tmp_path, "broken_plugin", group + "broken = no_such_module:SPEC\n")
    _dist_info(tmp_path, "odd_plugin", group + "odd = good_plugin:spec\n")  # misnamed
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.warns(PluginWarning) as caught:
        names = learners.available()
    assert "good" in names and "broken" not in names and "odd" not in names
    assert learners.make("good") == learners.NaiveMLE()
    messages = " ".join(str(w.message) for w in caught)
    assert "'broken'" in messages and "no_such_module" in messages and "'odd'" in messages
    assert learners.available() == names  # loaded once
    assert load_plugins("pgm_dp.no_such_group") == {}


TOY_PLUGIN = {
    "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "toy-pgm-dp-learner"
        version = "0.1"

        [project.entry-points."pgm_dp.learners"]
        toy = "toy_learner:SPEC"
    """,
    "toy_learner.py": """
        from dataclasses import dataclass

        from pgm_dp.learners import Fit, LearnerSpec, NaiveMLE


        @dataclass(frozen=True)
        class ToyRidge:
            def fit(self, release, mrf) -> Fit:
                return NaiveMLE(l2=1e-2).fit(release, mrf)


        SPEC = LearnerSpec("toy", ToyRidge, "release", "Toy ridge", "a plugin's learner")
    """,
}


@pytest.mark.slow
def test_a_learner_installed_as_a_plugin_runs_from_the_shell(tmp_path):
    src, target = tmp_path / "src", tmp_path / "site"
    src.mkdir()
    for name, text in TOY_PLUGIN.items():
        (src / name).write_text(textwrap.dedent(text).lstrip())
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
    pip += ["--no-build-isolation", "--no-index", "--target", str(target), str(src)]
    subprocess.run(pip, check=True, capture_output=True, cwd=tmp_path)
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(target), str(REPO)])}
    argv = ["--learners", "naive", "toy", "--T", "4", "--k", "2", "--N", "300", "--eps", "1"]
    argv += ["--out", str(tmp_path / "out"), "--no-plot"]
    done = subprocess.run(
        [sys.executable, "-m", "pgm_dp.cli", "compare", *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "Toy ridge" in done.stdout and "PluginWarning" not in done.stderr, done.stdout
    runs = pd.read_csv(tmp_path / "out" / "compare_chain.csv")
    assert sorted(runs.learner) == ["naive", "toy"] and runs.kl.notna().all()
