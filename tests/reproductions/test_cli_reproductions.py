"""``python -m reproductions PAPER EXPERIMENT``: the dispatcher's help is fast, bad arguments
are refused in under a second with one line and exit status 2, every experiment runs end to
end on tiny settings, and the argument modules' light copies match the experiments."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import reproductions
from reproductions import PAPERS
from reproductions._cli import build_parser, main

REPO = Path(__file__).resolve().parents[2]
#: Runs the reproductions' CLI and writes, at exit, whether it imported JAX (to argv[1]).
PROBE = (
    "import atexit, runpy, sys; out = sys.argv.pop(1); "
    "atexit.register(lambda: open(out, 'w').write(str('jax' in sys.modules))); "
    "sys.argv[0] = 'python -m reproductions'; "
    "runpy.run_module('reproductions', run_name='__main__')"
)


def _run(*argv):
    """The finished process and whether it imported JAX (it should not, to answer at once)."""
    with tempfile.NamedTemporaryFile("r", suffix=".txt") as probe:
        proc = subprocess.run([sys.executable, "-c", PROBE, probe.name, *argv],
                              capture_output=True, text=True, cwd=REPO)  # fmt: skip
        return proc, probe.read() == "True"


HELPS = [
    [],
    *([p] for p in PAPERS),
    ["bernstein2017", "fig2"],
    ["bernstein2017", "figures"],
    ["bernstein2017", "adult"],
    ["bernstein2017", "cgm-grid"],
    ["zhang2020", "recovery"],
    ["chakraborty2024", "fig1"],
    ["chakraborty2024", "coverage"],
    ["bayes", "calibration"],
]


@pytest.mark.parametrize("argv", HELPS, ids=lambda a: " ".join(a) or "top")
def test_help_is_fast(argv):
    proc, jax = _run(*argv, "--help")
    assert proc.returncode == 0 and "usage: python -m reproductions" in proc.stdout
    assert not jax, argv
    if len(argv) == 2:
        assert "(default: " in proc.stdout


def test_every_paper_lists_its_experiments():
    for paper in PAPERS:
        parser = build_parser(paper)
        experiments = parser._subparsers._group_actions[0].choices[paper]._subparsers
        assert experiments._group_actions[0].choices, paper


@pytest.mark.parametrize(
    "argv",
    [
        ["nopaper", "fig2"],
        ["bernstein2017"],
        ["bernstein2017", "fig9"],
        ["bernstein2017", "fig2", "--N", "100", "0"],
        ["bernstein2017", "fig2", "--eps", "0"],
        ["bernstein2017", "fig2", "--graphs", "tree"],
        ["bernstein2017", "fig2", "--learners", "naive", "bo-gus"],
        ["bernstein2017", "fig2", "--out", "/proc/nope"],
        ["bernstein2017", "figures", "fig9"],
        ["bernstein2017", "figures", "fig1a", "--trials", "0"],
        ["bernstein2017", "figures", "fig1a", "--out", "/proc/nope"],
        ["bernstein2017", "adult", "--columns", "age", "height"],
        ["bernstein2017", "adult", "--eps", "nan"],
        ["bernstein2017", "adult", "--trials", "0"],
        ["bernstein2017", "adult", "--learners", "random"],
        ["bernstein2017", "adult", "--test-fraction", "1"],
        ["bernstein2017", "adult", "--out", "/proc/nope"],
        ["bernstein2017", "cgm-grid", "--k", "two"],
        ["chakraborty2024", "fig7"],
        ["chakraborty2024", "mse-n", "--reps", "0"],
        ["chakraborty2024", "real", "--out", "/proc/nope"],
        ["chakraborty2024", "coverage", "--delta", "1"],
        ["zhang2020", "recovery", "--rho", "-1"],
        ["bayes", "calibration", "--out", "/proc/nope"],
        ["bayes", "nope"],
    ],
)
def test_bad_arguments_are_refused_fast(argv):
    proc, jax = _run(*argv)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "error" in proc.stderr
    assert not jax, argv


def test_errors_found_while_running_are_one_line(tmp_path, capsys):
    argv = ["bernstein2017", "fig2", "--N", "200", "--T", "4", "--k", "2", "--eps", "1"]
    assert main([*argv, "--learners", "nope", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m reproductions bernstein2017 fig2: error: unknown learner")
    assert len(err.strip().splitlines()) == 1


@pytest.mark.slow  # every paper's runner end to end (minutes)
def test_experiments_end_to_end(tmp_path, capsys):
    t = str(tmp_path)
    small = ["--T", "4", "--k", "2", "--eps", "1", "--seed", "0", "--out", t]
    fig2 = ["--N", "200", "--graphs", "chain", "--populations", "1", "--replications", "1"]
    assert main(["bernstein2017", "fig2", *small, *fig2, "--learners", "naive"]) == 0
    assert (tmp_path / "fig2_runs.csv").exists()
    assert main(["bernstein2017", "adult", "--columns", "sex", "race", "--eps", "1",
                 "--trials", "1", "--learners", "naive", "--out", t]) == 0  # fmt: skip
    assert main(["bernstein2017", "figures", "fig3a", "--quick", "--out", t]) == 0
    assert main(["chakraborty2024", "mse-density", "--quick", "--reps", "2", "--out", t]) == 0
    assert "[mse-density]" in capsys.readouterr().out
    assert main(["bernstein2017", "cgm-grid", "--graphs", "tree", "--k", "2", "--N", "300",
                 "--eps", "1", "--mechanisms", "laplace", "--populations", "1",
                 "--replications", "1", "--T", "4", "--learners", "naive", "cgm",
                 "--out", t]) == 0  # fmt: skip
    assert (tmp_path / "cgm_grid_runs.csv").exists()
    assert main(["zhang2020", "recovery", "--p", "4", "--n", "300", "--rho", "1", "--out", t]) == 0
    assert main(["bayes", "calibration", "--quick", "--releases", "2", "--eps", "1",
                 "--mechanisms", "gaussian", "--nuts-releases", "0", "--out", t]) == 0  # fmt: skip
    assert (tmp_path / "bayes_calibration.png").exists()


def test_light_lists_match_the_heavy_ones():
    from pgm_dp.compare import graphs as compare
    from reproductions.bernstein2017 import adult, cli_adult, cli_cgm_grid, cli_figures, figures
    from reproductions.chakraborty2024 import cli as prising_cli
    from reproductions.chakraborty2024 import prising

    assert cli_adult.ADULT_CHAIN == adult.ADULT_CHAIN
    assert cli_adult.ADULT_LEARNERS == adult.LEARNERS
    assert list(cli_figures.FIGURES) == list(figures.FIGURES)
    assert list(prising_cli.EXPERIMENTS) == list(prising.EXPERIMENTS)
    assert cli_cgm_grid._MECHANISMS == compare.MECHANISMS


MODULES = sorted(
    m.name for m in pkgutil.walk_packages(reproductions.__path__, prefix="reproductions.")
)


#: Examples that run NUTS: the slow tier.
SLOW_EXAMPLES = {"reproductions.bayes.experiments"}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(m, marks=pytest.mark.slow) if m in SLOW_EXAMPLES else m
        for m in MODULES
        if not m.endswith("__main__")
    ],
)
def test_docstring_examples(name):
    mod = importlib.import_module(name)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
