"""The command line: every workflow sub-command end to end on small data, fast help, each
bad argument refused in under a second with a one-line error and exit status 2, errors found
while running (an unknown learner, a missing extra) as one line too, and the main job."""

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile

import networkx as nx
import pandas as pd
import pytest
import xarray as xr

from pgm_dp.cli import COMMANDS, build_parser, main
from pgm_dp.cli.compare import DEFAULT_LEARNERS

HEAVY = ("jax", "numpyro", "pgmpy")
#: Runs the CLI and writes, at exit, which heavy modules it imported (to the file in argv[1]).
PROBE = (
    "import atexit, runpy, sys; out = sys.argv.pop(1); "
    f"atexit.register(lambda: open(out, 'w').write(' '.join(m for m in {HEAVY!r} "
    "if m in sys.modules))); "
    "sys.argv[0] = 'pgm-dp'; runpy.run_module('pgm_dp.cli', run_name='__main__')"
)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    from pgm_dp.models import third_order_chain

    tmp = tmp_path_factory.mktemp("cli")
    truth = third_order_chain(4, 2, rng=0)
    data = truth.sample(3000, rng=1)
    data["X0"] = data["X0"].map({0: "no", 1: "yes"})
    data.to_csv(tmp / "train.csv", index=False)
    data.head(500).to_csv(tmp / "test.csv", index=False)
    edges = [(i, (i + d) % 12) for i in range(12) for d in (1, 2)]  # a 4-regular ring
    pd.DataFrame(edges, columns=["source", "target"]).to_csv(tmp / "g.csv", index=False)
    signs = [1 if i % 3 else -1 for i in range(12)]
    pd.DataFrame({"node": range(12), "outcome": signs}).to_csv(tmp / "o.csv", index=False)
    return tmp


def _cli(*argv):
    """The finished process and the heavy modules it imported (none: it answered at once)."""
    with tempfile.NamedTemporaryFile("r", suffix=".txt") as probe:
        proc = subprocess.run([sys.executable, "-c", PROBE, probe.name, *argv],
                              capture_output=True, text=True)  # fmt: skip
        return proc, set(probe.read().split())


@pytest.mark.slow  # release, fit, evaluate and posterior in one process
def test_workflow_end_to_end(files, capsys):
    t = str(files)
    assert main(["release", "--data", f"{t}/train.csv", "--cliques", "X0,X1", "X1,X2",
                 "--epsilon", "1", "--seed", "0", "--out", f"{t}/r.json"]) == 0  # fmt: skip
    assert main(["fit", "--release", f"{t}/r.json", "--learner", "naive",
                 "--out", f"{t}/m1.npz"]) == 0  # fmt: skip
    assert main(["fit", "--data", f"{t}/train.csv", "--epsilon", "2", "--seed", "0",
                 "--categories-from-data", "--learner", "naive",
                 "--out", f"{t}/m2.npz"]) == 0  # fmt: skip
    assert main(["evaluate", "--model", f"{t}/m2.npz", "--data", f"{t}/test.csv",
                 "--reference", f"{t}/m2.npz"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert f"written: {t}/m2.npz" in out and "KL(reference || model) = 0" in out
    assert "held-out log-likelihood = -" in out
    assert main(["posterior", "--release", f"{t}/r.json", "--draws", "50", "--out", t]) == 0
    out, err = capsys.readouterr()
    assert "NUTS iterations per chain 550/550: draws" in err  # progress from the chains
    assert "predictive p-value X0,X1" in out and f"written: {t}/summary.csv" in out
    assert "diagnostics: max R-hat" in out and "tables with p < 0.01:" in out
    tree = xr.open_datatree(f"{t}/posterior.nc", engine="h5netcdf")  # the core install's engine
    assert tree.posterior["marginal:X0,X1"].shape == (4, 50, 2, 2)
    summary = pd.read_csv(f"{t}/summary.csv", index_col=0)
    assert {"r_hat", "ess_bulk", "ess_tail", "eti90_lb", "eti90_ub"} <= set(summary.columns)
    assert "table:X1,X2[0, 0]" in summary.index  # the data's tables, with the marginals
    assert (summary["sd"] != summary["sd"].round(2)).any()  # full precision, not 2 decimals


HELPS = [[], *([c] for c in COMMANDS), ["prising", "estimate"], ["prising", "posterior"]]


@pytest.mark.parametrize("argv", HELPS, ids=lambda a: " ".join(a) or "top")
def test_help_is_fast(argv):
    proc, heavy = _cli(*argv, "--help")
    assert proc.returncode == 0 and "usage" in proc.stdout and not heavy, (argv, heavy)
    if argv and argv not in (["prising"], ["evaluate"]):  # evaluate: no option has a default
        assert "(default: " in proc.stdout
    assert "(default: None)" not in proc.stdout and "``" not in proc.stdout
    assert "jax" not in proc.stderr


def _options(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _options(sub)
        elif action.option_strings and action.dest != "help":
            yield parser.prog, action


def test_every_option_of_every_command_has_help():
    missing = [
        f"{prog} {a.option_strings[0]}" for prog, a in _options(build_parser()) if not a.help
    ]
    assert not missing, missing


def test_the_package_commands_are_the_workflow():
    assert set(COMMANDS) == {
        "prepare",
        "release",
        "fit",
        "sample",
        "evaluate",
        "posterior",
        "compare",
        "prising",
        "demo",
    }
    proc, _ = _cli("prising", "fig1")  # the paper's figures are reproductions now
    assert proc.returncode == 2 and "invalid choice" in proc.stderr


def test_parsers_import_nothing_heavy():
    code = (
        "import sys; from pgm_dp.cli import build_parser; build_parser(); "
        "print(sorted(m for m in ('jax', 'pgmpy', 'matplotlib', 'pandas') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert out.strip() == "[]"


def test_light_lists_match_the_heavy_ones():
    from pgm_dp import compare

    assert DEFAULT_LEARNERS == compare.LEARNERS


@pytest.mark.parametrize(
    "argv",
    [
        ["release", "--data", "missing.csv", "--cliques", "A,B"],
        ["release", "--data", "{t}/train.csv", "--cliques", "A,A"],
        ["release", "--data", "{t}/train.csv", "--cliques", "A,B", "--epsilon", "-1"],
        ["release", "--data", "{t}/train.csv", "--cliques", "A,B", "--delta", "2"],
        ["release", "--data", "{t}/train.csv", "--cliques", "A,B", "--out", "/proc/nope/r.json"],
        ["fit", "--release", "{t}/train.csv", "--data", "{t}/train.csv"],
        ["fit", "--release", "{t}/train.csv"],  # a data file given as a release
        ["fit", "--data", "{t}/train.csv", "--epsilon", "nan"],
        ["evaluate", "--model", "missing.npz"],
        ["compare", "--eps", "-1"],
        ["compare", "--eps", "inf"],
        ["compare", "--out", "/proc/nope"],
        ["compare", "--T", "x"],
        ["compare", "--T", "3"],
        ["compare", "--k", "1"],
        ["compare", "--N", "0"],
        ["compare", "--populations", "0"],
        ["compare", "--replications", "-2"],
        ["compare", "--learners", "no-pe"],
        ["compare", "--graph", "grid"],
        ["compare", "--seed", "-1"],
        ["demo", "--T", "2"],
        ["demo", "--n", "0"],
        ["prising"],
        ["prising", "fig7"],
        [
            "prising",
            "estimate",
            "--graph",
            "missing.csv",
            "--outcomes",
            "{t}/o.csv",
            "--epsilon",
            "1",
        ],  # fmt: skip
        [
            "prising",
            "estimate",
            "--graph",
            "{t}/g.csv",
            "--outcomes",
            "{t}/o.csv",
            "--epsilon",
            "0",
        ],  # fmt: skip
        [
            "prising",
            "estimate",
            "--graph",
            "{t}/g.csv",
            "--outcomes",
            "{t}/o.csv",
            "--epsilon",
            "1",
            "--delta",
            "1",
        ],  # fmt: skip
        [
            "prising",
            "estimate",
            "--graph",
            "{t}/g.csv",
            "--outcomes",
            "{t}/o.csv",
            "--epsilon",
            "1",
            "--out",
            "/proc/nope/e.json",
        ],  # fmt: skip
        ["posterior", "--release", "missing.json"],
        ["posterior", "--release", "{t}/train.csv", "--draws", "0"],
        ["posterior", "--release", "{t}/train.csv", "--method", "mcmc"],
        ["posterior", "--release", "{t}/train.csv"],  # a data file given as a release
        ["nonsense"],
        ["fig2"],  # reproductions are not package commands
    ],
)
def test_bad_arguments_are_refused_fast(files, argv):
    proc, heavy = _cli(*[a.format(t=files) for a in argv])
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "error" in proc.stderr
    assert "jax" not in heavy, heavy  # refused before any model or noise is built


def test_errors_found_while_running_are_one_line(files, capsys):
    bad = pd.read_csv(files / "train.csv").assign(X0="maybe")
    bad.to_csv(files / "bad.csv", index=False)
    code = main(["release", "--data", str(files / "bad.csv"), "--cliques", "X0,X1",
                 "--domain", str(_domain(files)), "--out", str(files / "x.json")])  # fmt: skip
    assert code == 2
    assert "not one of its labels" in capsys.readouterr().err


def _domain(files):
    path = files / "domain.json"
    path.write_text('{"X0": ["no", "yes"], "X1": 2, "X2": 2, "X3": 2}')
    return path


def test_a_data_file_given_as_a_release_is_named_as_such(files):
    proc, _ = _cli("fit", "--release", str(files / "train.csv"))
    assert "is not a release" in proc.stderr and "JSON" in proc.stderr


@pytest.mark.parametrize(
    ("learners", "message"),
    [
        (["naive", "nope"], "unknown learner 'nope'; choose from ["),
        (["mbi"], "needs mbi: pip install 'pgm-dp[bench]'"),
    ],
)
def test_learners_are_checked_against_the_registry_before_any_work(
    files, capsys, learners, message
):
    if learners == ["mbi"] and importlib.util.find_spec("mbi") is not None:
        pytest.skip("mbi is installed")
    code = main(["compare", "--T", "4", "--k", "2", "--N", "200", "--eps", "1",
                 "--out", str(files), "--learners", *learners])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("pgm-dp compare: error: ")


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_compare_and_demo_end_to_end(files, capsys):
    t = str(files)
    small = ["--T", "4", "--k", "2", "--eps", "1", "--seed", "0", "--out", t]
    assert main(["compare", *small, "--N", "300", "--learners", "nonprivate", "naive"]) == 0
    out, err = capsys.readouterr()
    assert "Median KL" in out and f"Plot written to {t}/compare_chain.png" in out
    assert "compare: fits 2/2: naive at epsilon 1 done" in err  # progress, tqdm or not
    assert main(["compare", *small, "--N", "300", "--learners", "naive", "--no-plot"]) == 0
    assert "Plot written" not in capsys.readouterr().out
    assert main(["demo", "--T", "4", "--k", "2", "--n", "200"]) == 0


def test_plots_without_matplotlib_are_skipped_or_refused_clearly(files, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if the plot extra were missing
    out = files / "no_mpl"
    argv = ["compare", "--T", "4", "--k", "2", "--N", "200", "--eps", "1", "--out", str(out)]
    assert main([*argv, "--learners", "naive"]) == 0
    assert "note: no plot written (plots need matplotlib: pip install 'pgm-dp[plot]')" in (
        capsys.readouterr().out
    )
    assert (out / "compare_chain.csv").exists() and not (out / "compare_chain.png").exists()
    assert main([*argv, "--learners", "naive", "--plot"]) == 2
    err = capsys.readouterr().err
    assert err == "pgm-dp compare: error: plots need matplotlib: pip install 'pgm-dp[plot]'\n"


@pytest.mark.slow
def test_the_main_job_fits_adult_privately(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "private fit of the shipped UCI Adult table" in out
    assert "Selected by AIM: " in out and "Privacy budget: the guarantee is ε = 1;" in out
    assert "Fit check (no extra budget)" in out
    assert "Model written to pgm_dp_results/adult_model.npz" in out
    assert (tmp_path / "pgm_dp_results" / "adult_model.npz").exists()


def test_prising_estimate(files, capsys):
    t = str(files)
    argv = ["prising", "estimate", "--graph", f"{t}/g.csv", "--outcomes", f"{t}/o.csv",
            "--epsilon", "50", "--seed", "0", "--out", f"{t}/e.json"]  # fmt: skip
    assert main(argv) == 0
    doc = json.loads((files / "e.json").read_text())
    assert doc["nodes"] == 12 and doc["edges"] == 24 and doc["beta_private"] >= 0
    assert "PrIsing estimate of beta" in capsys.readouterr().out
    graph = nx.circulant_graph(12, [1, 2])
    nx.write_gml(nx.relabel_nodes(graph, str), files / "g.gml")
    assert main([*argv[:3], f"{t}/g.gml", *argv[4:-2], "--scaling", "regular"]) == 0
    pd.read_csv(files / "o.csv").replace(-1, 0).to_csv(files / "o01.csv", index=False)
    assert main([*argv[:5], f"{t}/o01.csv", *argv[6:]]) == 0
    assert json.loads((files / "e.json").read_text()) == doc  # 0/1 reads as -1/+1


@pytest.mark.parametrize(
    ("outcomes", "message"),
    [
        ({"node": range(11), "outcome": [1] * 11}, "differ from the graph"),
        ({"node": range(12), "outcome": [2] * 12}, "all ±1 or all 0/1"),
        ({"node": [0] * 12, "outcome": [1] * 12}, "repeated"),
    ],
)
def test_prising_estimate_refuses_bad_outcomes(files, capsys, outcomes, message):
    pd.DataFrame(outcomes).to_csv(files / "bad_o.csv", index=False)
    code = main(["prising", "estimate", "--graph", str(files / "g.csv"),
                 "--outcomes", str(files / "bad_o.csv"), "--epsilon", "1"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow  # NUTS's compile on the exact path: about a minute on a shared CPU
def test_posterior_of_a_release_over_a_subset_of_a_wide_domain(tmp_path, capsys):
    """A release of one pair of a domain of 2 * 2 * 20^3 = 32000 joint states; the posterior
    (NUTS by default, short here) has the variables as dims and their labels as coords."""
    import numpy as np

    gen = np.random.default_rng(0)
    wide = pd.DataFrame({f"W{i}": gen.integers(0, 20, 300) for i in range(3)})
    wide["A"] = gen.choice(["no", "yes"], 300)
    wide["B"] = gen.integers(0, 2, 300)
    wide.to_csv(tmp_path / "wide.csv", index=False)
    t = str(tmp_path)
    assert main(["release", "--data", f"{t}/wide.csv", "--cliques", "A,B", "--epsilon", "1",
                 "--seed", "0", "--out", f"{t}/r.json"]) == 0  # fmt: skip
    args = build_parser().parse_args(["posterior", "--release", f"{t}/r.json"])
    assert (args.method, args.covariance) == ("nuts", "auto")
    assert main(["posterior", "--release", f"{t}/r.json", "--draws", "20", "--warmup", "20",
                 "--chains", "1", "--covariance", "exact", "--level", "0.8",
                 "--out", t]) == 0  # fmt: skip
    assert "predictive p-value A,B" in capsys.readouterr().out
    tree = xr.open_datatree(f"{t}/posterior.nc", engine="h5netcdf")
    site = tree.posterior["marginal:A,B"]
    assert site.dims == ("chain", "draw", "A", "B") and list(site.A.values) == ["no", "yes"]
    summary = pd.read_csv(f"{t}/summary.csv")
    assert "marginal:A,B[yes, 1]" in set(summary.iloc[:, 0])
    assert {"eti80_lb", "eti80_ub"} <= set(summary.columns)  # the level asked for
