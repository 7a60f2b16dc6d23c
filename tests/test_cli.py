"""The command line: every workflow sub-command end to end on small data, fast help, and
each bad argument refused in under a second with a one-line error and exit status 2."""

import subprocess
import sys
import time

import pandas as pd
import pytest

from pgm_dp.cli import main

RUN = [sys.executable, "-m", "pgm_dp.cli"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    from pgm_dp.models import third_order_chain

    tmp = tmp_path_factory.mktemp("cli")
    truth = third_order_chain(4, 2, rng=0)
    data = truth.sample(3000, rng=1)
    data["X0"] = data["X0"].map({0: "no", 1: "yes"})
    data.to_csv(tmp / "train.csv", index=False)
    data.head(500).to_csv(tmp / "test.csv", index=False)
    return tmp


def _cli(*argv):
    start = time.perf_counter()
    proc = subprocess.run([*RUN, *argv], capture_output=True, text=True)
    return proc, time.perf_counter() - start


def test_workflow_end_to_end(files, capsys):
    t = str(files)
    assert main(["release", "--data", f"{t}/train.csv", "--cliques", "X0,X1", "X1,X2",
                 "--epsilon", "1", "--seed", "0", "--out", f"{t}/r.json"]) == 0  # fmt: skip
    assert main(["fit", "--release", f"{t}/r.json", "--learner", "naive",
                 "--out", f"{t}/m1.npz"]) == 0  # fmt: skip
    assert main(["fit", "--data", f"{t}/train.csv", "--epsilon", "2", "--seed", "0",
                 "--learner", "naive", "--out", f"{t}/m2.npz"]) == 0  # fmt: skip
    assert main(["evaluate", "--model", f"{t}/m2.npz", "--data", f"{t}/test.csv",
                 "--reference", f"{t}/m2.npz"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert f"written: {t}/m2.npz" in out and "KL(reference || model) = 0" in out
    assert "held-out log-likelihood = -" in out


def test_help_is_fast():
    for argv in (["--help"], ["release", "--help"], ["fit", "--help"], ["evaluate", "--help"]):
        proc, seconds = _cli(*argv)
        assert proc.returncode == 0 and "usage" in proc.stdout and seconds < 1.0, (argv, seconds)
    assert "(default: 1.0)" in _cli("fit", "--help")[0].stdout


@pytest.mark.parametrize(
    "argv",
    [
        ["release", "--data", "missing.csv", "--cliques", "A,B"],
        ["release", "--data", "{t}/train.csv", "--cliques", "A,A"],
        ["release", "--data", "{t}/train.csv", "--cliques", "A,B", "--epsilon", "-1"],
        ["release", "--data", "{t}/train.csv", "--cliques", "A,B", "--delta", "2"],
        ["release", "--data", "{t}/train.csv", "--cliques", "A,B", "--out", "/proc/nope/r.json"],
        ["fit", "--release", "{t}/train.csv", "--data", "{t}/train.csv"],
        ["fit", "--data", "{t}/train.csv", "--epsilon", "nan"],
        ["evaluate", "--model", "missing.npz"],
        ["compare", "--eps", "-1"],
        ["compare", "--out", "/proc/nope"],
        ["compare", "--T", "x"],
        ["nonsense"],
    ],
)
def test_bad_arguments_are_refused_fast(files, argv):
    proc, seconds = _cli(*[a.format(t=files) for a in argv])
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "error" in proc.stderr
    assert seconds < 1.0 or argv[0] == "compare", seconds  # compare's own parser imports JAX


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
