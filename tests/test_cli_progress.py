"""What a user sees while a command runs: progress lines on stderr (counts, time left),
``--quiet``, no XLA alarm, reports without long floats, help for both modes of compare."""

import io
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pgm_dp._progress import Progress, reporting, step, tick
from pgm_dp.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _people(n: int = 2000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n)
    smoker = np.where(rng.random(n) < np.where(age < 40, 0.6, 0.15), "yes", "no")
    city = rng.choice(["Lyon", "Nice", "Paris"], n)
    return pd.DataFrame({"age": age, "city": city, "smoker": smoker})


def test_progress_lines_count_iterations_and_estimate_the_time_left():
    now = [0.0]
    out = io.StringIO()
    progress = Progress(out, every=0, clock=lambda: now[0])
    progress.step("AIM round", 0, 10)
    for r in range(1, 4):
        now[0] += 6
        progress.tick("mle", 50)
        progress.step("AIM round", r, 10, f"{10 * r}% of the budget spent")
    lines = out.getvalue().splitlines()
    assert lines[0] == "  AIM round 0/10 ..."
    assert (
        lines[-1]
        == "  AIM round 3/10: 30% of the budget spent; mle 150 iterations (18s, about 42s left)"
    )


def test_a_step_resumed_keeps_its_timing_and_one_counted_again_restarts():
    now = [0.0]
    out = io.StringIO()
    progress = Progress(out, every=0, clock=lambda: now[0])
    progress.step("compare: fits", 0, 4)
    now[0] = 20.0
    progress.step("AIM round", 3, 3)  # another step between
    progress.step("compare: fits", 0, 4, "naive")  # the same count again: not a restart
    progress.step("compare: fits", 1, 4)
    assert out.getvalue().splitlines()[-1] == "  compare: fits 1/4 (20s, about 1m00s left)"
    now[0] = 30.0
    progress.step("AIM round", 0, 3)  # counted again from 0: a new run of the step
    assert out.getvalue().splitlines()[-1] == "  AIM round 0/3 ..."


def test_progress_is_throttled_off_a_terminal_and_rewrites_one_line_on_one():
    now = [0.0]
    out = io.StringIO()
    progress = Progress(out, clock=lambda: now[0])  # not a terminal: a line every 10 s
    for i in range(1, 101):
        now[0] += 0.5
        progress.step("records sampled", i, 100)
    assert len(out.getvalue().splitlines()) == 1 + 4 + 1  # the start, at 10 to 40 s, the end

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    term = Terminal()
    progress = Progress(term, every=0, clock=lambda: now[0])
    progress.step("a", 1, 2)
    progress.step("a", 2, 2)
    progress.step("b")
    progress.close()
    text = term.getvalue()
    assert text.count("\r") == 3 and text.count("\n") == 2 and text.endswith("\n")


def test_results_end_a_terminal_progress_line_first():
    from pgm_dp._progress import end_line

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    term = Terminal()
    with reporting(Progress(term, every=0)):
        step("AIM round", 1, 2)
        end_line()  # what the command line's result lines call first
        step("AIM round", 2, 2)
    assert term.getvalue() == "\r  AIM round 1/2 ...\n\r  AIM round 2/2 ...\n"


def test_without_a_reporter_steps_and_ticks_do_nothing(capsys):
    step("AIM round", 1, 2)
    tick("mle", 3)
    with reporting(None):
        step("AIM round", 1, 2)
    assert capsys.readouterr() == ("", "")


def test_nuts_reports_from_its_host_callback():
    from pgm_dp.bayes.nuts import _report

    out = io.StringIO()
    with reporting(Progress(out, every=0)):
        _report(np.int64(30), warmup=50, total=150)
        _report(np.int64(60), warmup=50, total=150)
    text = out.getvalue()
    assert "NUTS iterations per chain 30/150: warm-up" in text
    assert "NUTS iterations per chain 60/150: draws" in text


#: A number with a decimal point or an exponent (a float as printed).
FLOAT = re.compile(r"(?<![\w.])-?(\d+\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+)(?![\w.])")


def _significant(text: str) -> int:
    mantissa = re.split("[eE]", text)[0].replace(".", "").lstrip("0")
    return len(mantissa)


@pytest.fixture(scope="module")
def people(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("people")
    _people().to_csv(tmp / "people.csv", index=False)
    spec = (
        '{"age": {"bounds": [18, 90]}, "city": ["Lyon", "Nice", "Paris"], "smoker": ["yes", "no"]}'
    )
    (tmp / "spec.json").write_text(spec)
    return tmp


def _fit(people, *extra):
    data, spec = str(people / "people.csv"), str(people / "spec.json")
    return main(["fit", "--data", data, "--prepare", spec, "--epsilon", "1", "--seed", "0",
                 "--out", str(people / "m.npz"), *extra])  # fmt: skip


def test_a_fit_shows_its_steps_and_its_report_has_short_numbers(people, capsys):
    assert _fit(people) == 0
    out, err = capsys.readouterr()
    for words in (
        "preparing 3 columns",
        "AIM round 0/",
        "fitting the model (naive)",
        "checking the fit",
    ):
        assert words in err, err
    assert re.search(r"AIM round \d+/\d+: 100% of the budget spent", err), err
    long = [m for m in FLOAT.findall(out) if _significant(m) > 4]
    assert not long, long  # four significant digits at most; exact values in the saved files
    assert "PureDP(" not in out and "% of the total" in out
    assert "Selected by AIM" in out and "\n    1. " in out  # one marginal per line
    assert "estimated from all the noisy tables measured" in out


def test_quiet_turns_progress_off(people, capsys):
    assert _fit(people, "--quiet") == 0
    err = capsys.readouterr().err
    assert "AIM round" not in err and "preparing" not in err
    assert main(["sample", str(people / "m.npz"), "-n", "300", "--out", str(people / "s.csv")]) == 0
    err = capsys.readouterr().err
    assert "records sampled 300/300" in err and "building its sampler" in err
    assert (
        main(["sample", str(people / "m.npz"), "-n", "300", "--out", str(people / "s.csv"), "-q"])
        == 0
    )
    assert capsys.readouterr().err == ""


def test_the_command_line_keeps_xla_logs_off_before_jax_and_a_user_setting_wins():
    code = (
        "import os, sys\nfrom pgm_dp.cli import main\ntry:\n    main(['demo', '--help'])\n"
        "except SystemExit:\n    pass\n"
        "print(os.environ['TF_CPP_MIN_LOG_LEVEL'], 'jax' in sys.modules)"
    )
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert run.stdout.split()[-2:] == ["3", "False"], run.stdout + run.stderr
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**env, "TF_CPP_MIN_LOG_LEVEL": "0"})  # fmt: skip
    assert run.stdout.split()[-2:] == ["0", "False"]


def test_compare_help_describes_both_modes_and_each_default(capsys):
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "Model mode (without --data)" in text and "Data mode (--data FILE)" in text
    assert "held-out log-likelihood" in text and "2-way total variation" in text
    assert (
        "(default: random nonprivate naive cgm psgd without --data; naive cgm with --data)" in text
    )
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "KL from a true model; --data: held-out log-likelihood and 2-way error" in text


def test_posterior_needs_nothing_beyond_the_core_install():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    core = {re.split(r"[<>=!~\[; ]", d)[0] for d in project["project"]["dependencies"]}
    assert "h5netcdf" in core  # xarray writes posterior.nc through it
    source = (ROOT / "pgm_dp" / "cli" / "posterior.py").read_text()
    assert "require_extra" not in source
