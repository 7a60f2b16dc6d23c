"""What a release must not leak: exact N, data-dependent scales, budgets recorded short,
budget charged before a refusal, raw values in error messages, float noise in PMW, seeds
shared between steps. Each test failed before its fix.

The statistical test (:func:`test_default_release_does_not_tell_d_from_d_plus_one`) has a
false-alarm rate of at most ``ALPHA = 1e-3`` (Clopper-Pearson, Bonferroni over its events;
:mod:`pgm_dp.privacy.audit`); its seeds are fixed, so its outcome is deterministic.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from pgm_dp import Accountant, Domain, PureDP
from pgm_dp.errors import DataValidationError, DomainError, ModelTooLargeError
from pgm_dp.privacy import ZCDP, laplace_mechanism, release_marginals
from pgm_dp.privacy.audit import audit_thresholds

ALPHA = 1e-3
DOM = Domain(["A", "B", "C"], [2, 3, 2])
CLIQUES = [("A", "B"), ("B", "C")]


def _records(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, [2, 3, 2], size=(n, 3))


# -- 6. N released exactly ---------------------------------------------------------------------
@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_default_release_does_not_tell_d_from_d_plus_one():
    """Before: ``total="public"`` by default, D and D + 1 record told apart 300 times of 300.
    Now the default total is an estimate from the noisy tables: post-processing of an
    ε-DP release, so no event of it may have an ε lower bound above ε (false alarm ALPHA)."""
    d = _records(501)
    a, b = d[:500], d  # neighbours: b has one more record
    docs = {0: [], 1: []}
    for i in range(300):
        for side, data in ((0, a), (1, b)):
            rel = release_marginals(data, CLIQUES, DOM, budget=PureDP(1.0), rng=10_000 * side + i)
            docs[side].append(json.loads(rel.to_json()))  # everything a user sees
    totals = {side: [doc["total"] for doc in docs[side]] for side in docs}
    res = audit_thresholds(
        totals[0], totals[1], thresholds=500.5 + np.arange(-24, 25, 4.0), alpha=ALPHA
    )
    assert res.consistent_with(1.0), res  # before: epsilon_lower = inf (x <= 500.5)
    exact = sum(t == 500 for t in totals[0]) + sum(t == 501 for t in totals[1])
    assert exact < 60, exact  # the exact N is no longer what the release says
    assert all(doc["total_source"] == "estimate" for side in docs for doc in docs[side])
    public = release_marginals(a, CLIQUES, DOM, budget=PureDP(1.0), rng=0, total="public")
    assert public.total == 500 and public.total_is_public  # the papers' convention, on request


@pytest.fixture(scope="module")
def csv(tmp_path_factory):
    from pgm_dp.models import third_order_chain

    tmp = tmp_path_factory.mktemp("audit")
    data = third_order_chain(4, 2, rng=0).sample(3000, rng=1)
    data.to_csv(tmp / "d.csv", index=False)
    return tmp


def test_cli_release_prints_and_writes_no_exact_n(csv, capsys):
    from pgm_dp.cli import main

    argv = ["release", "--data", str(csv / "d.csv"), "--cliques", "X0,X1", "X1,X2",
            "--seed", "0", "--out", str(csv / "r.json")]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    doc = json.loads((csv / "r.json").read_text())
    assert doc["total_source"] == "estimate" and doc["total"] != 3000
    assert "3,000" not in out and "3000" not in out
    assert main([*argv, "--total", "public"]) == 0
    assert "N = 3,000 (public" in capsys.readouterr().out


# -- 7. data-dependent noise scales in fit.info ------------------------------------------------
def test_zhang_fits_show_no_data_dependent_scale():
    """Before: ``fit.info["scale"]`` held Alg. 3's ``c / |S_uv|`` per sub-problem (the one-way
    counts) and Alg. 2's ``c / n``. Now only ``c``, the same for data of different counts."""
    from pgm_dp.learners import ZhangIsing, ZhangPairwise
    from pgm_dp.models import pairwise

    truth = pairwise(np.zeros((3, 3, 3, 3)), np.zeros((3, 3)))
    rng = np.random.default_rng(0)
    skewed = np.minimum(rng.integers(0, 3, (400, 3)), rng.integers(0, 3, (400, 3)))
    runs = []
    for codes in (rng.integers(0, 3, (300, 3)), skewed):
        acc = Accountant(ZCDP(1.0))
        fit = ZhangPairwise(steps=4).fit(codes, truth, budget=ZCDP(1.0), rng=1, accountant=acc)
        assert "scale" not in fit.info
        runs.append((fit.info["sum_scale"], acc.charges[0].scale))
    assert runs[0] == runs[1] and runs[0][0] == runs[0][1]
    spins = rng.integers(0, 2, (200, 3))
    ising = ZhangIsing(steps=4).fit(spins, pairwise(np.zeros((3, 3, 2, 2)), np.zeros((3, 2))),
                                    budget=ZCDP(1.0), rng=1)  # fmt: skip
    assert "scale" not in ising.info and ising.info["sum_scale"] > 0


# -- 8. the fit's budget misses the selection's share ------------------------------------------
def test_cli_fit_records_everything_spent(csv):
    from pgm_dp.cli import main
    from pgm_dp.io import load_fit

    base = ["fit", "--data", str(csv / "d.csv"), "--learner", "naive", "--seed", "3",
            "--categories-from-data"]  # fmt: skip
    assert main([*base, "--out", str(csv / "sel.npz")]) == 0  # preparation, AIM, release
    assert load_fit(csv / "sel.npz").info["budget"].epsilon == pytest.approx(1.0)
    assert main([*base, "--cliques", "X0,X1", "--out", str(csv / "cl.npz")]) == 0
    assert load_fit(csv / "cl.npz").info["budget"].epsilon == pytest.approx(1.0)


def test_with_one_way_charges_the_whole_selection():
    from pgm_dp.models import third_order_chain
    from pgm_dp.select import select_cliques, with_one_way

    truth = third_order_chain(4, 2, rng=0)
    data = truth.sample(2000, rng=1)
    sel = select_cliques(data, PureDP(0.5), truth.domain, rng=2)
    rel = release_marginals(data, sel.cliques, truth.domain, budget=PureDP(0.5), rng=3)
    assert with_one_way(sel, rel).budget == PureDP(1.0)


def test_cli_fit_seeds_each_step_from_its_own_stream(csv, monkeypatch):
    """Before: ``--seed S`` gave the MST selection and the release the same generator state."""
    import pgm_dp.table.selection as selection
    from pgm_dp.cli import main

    states = []

    def spy(original):
        def wrapped(*args, rng=None, **kwargs):
            states.append(np.random.default_rng(rng).bit_generator.state["state"])
            return original(*args, rng=rng, **kwargs)

        return wrapped

    monkeypatch.setattr(selection, "select_cliques", spy(selection.select_cliques))
    monkeypatch.setattr(selection, "release_marginals", spy(selection.release_marginals))
    argv = ["fit", "--data", str(csv / "d.csv"), "--learner", "naive", "--seed", "7",
            "--selection", "mst", "--categories-from-data",
            "--out", str(csv / "s.npz")]  # fmt: skip
    assert main(argv) == 0
    assert len(states) >= 2 and states[0] != states[-1]


# -- low: budget charged, then refused ---------------------------------------------------------
def test_alg5_refuses_bad_steps_before_pmw_is_charged():
    from pgm_dp.learners.zhang.binary_mrf import learn_binary_mrf

    z = np.where(np.random.default_rng(0).random((200, 3)) < 0.5, 1.0, -1.0)
    for opts in ({"steps": 1}, {"max_steps": 1}):
        acc = Accountant(ZCDP(2.0))
        with pytest.raises(DataValidationError):
            learn_binary_mrf(z, 2, lam=1.0, rho=1.0, norm="linf", accountant=acc, **opts)
        assert not acc.charges


def test_select_cliques_refuses_before_any_charge():
    from pgm_dp.select import select_cliques

    dom = Domain(["A", "B", "C", "D"], [2, 2, 2, 2])
    data = np.zeros((50, 4), dtype=int)
    acc = Accountant(PureDP(1.0))
    with pytest.raises(DomainError, match="connect"):
        select_cliques(data, PureDP(1.0), dom, candidates=[("A", "B"), ("C", "D")], accountant=acc)
    assert not acc.charges
    big = Domain(["A", "B", "C"], [2**15, 2**14, 2])
    with pytest.raises(ModelTooLargeError):
        select_cliques(np.zeros((5, 3), dtype=int), PureDP(1.0), big, accountant=acc)
    assert not acc.charges


# -- low: refusals that were not ValueErrors ---------------------------------------------------
def test_tiny_epsilon_is_a_value_error_before_any_charge():
    acc = Accountant(PureDP(1.0))
    for eps in (5e-324, 1e-300):
        with pytest.raises(ValueError, match="too small"):
            laplace_mechanism([1.0], l1_sensitivity=1.0, budget=PureDP(eps), accountant=acc)
    assert not acc.charges


def test_cli_psgd_without_delta_is_one_line(csv, capsys):
    from pgm_dp.cli import main

    code = main(["fit", "--data", str(csv / "d.csv"), "--cliques", "X0,X1", "--learner", "psgd",
                 "--out", str(csv / "p.npz")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "ApproxDP" in err


# -- low: raw values and rows in error messages ------------------------------------------------
def test_validation_errors_do_not_echo_values_or_rows():
    codes = np.zeros((200, 3), dtype=int)
    codes[123, 1] = 987_654
    with pytest.raises(DataValidationError) as err:
        DOM.encode(codes)
    msg = str(err.value)
    assert "'B'" in msg and "0..2" in msg and "987654" not in msg and "123" not in msg
    floats = codes.astype(float)
    floats[123, 1] = np.nan
    with pytest.raises(DataValidationError) as err:
        DOM.encode(floats)
    assert "123" not in str(err.value) and "'B'" in str(err.value)
    labelled = Domain(["name", "B"], [2, 2], labels={"name": ("ann", "bob")})
    frame = pd.DataFrame({"name": ["ann"] * 99 + ["Mallory Secret"], "B": [0] * 100})
    with pytest.raises(DataValidationError) as err:
        labelled.encode(frame)
    msg = str(err.value)
    assert "not one of its labels" in msg and "Mallory" not in msg and "99" not in msg


# -- low: PMW's float Laplace ------------------------------------------------------------------
def test_pmw_draws_no_float_laplace(monkeypatch):
    import pgm_dp.learners.zhang.pmw as pmw
    import pgm_dp.privacy.samplers as samplers

    def refuse(*args, **kwargs):
        raise AssertionError("float Laplace noise drawn")

    monkeypatch.setattr(samplers, "sample_laplace", refuse)
    monkeypatch.setattr(pmw, "sample_laplace", refuse, raising=False)
    z = np.where(np.random.default_rng(0).random((3000, 4)) < 0.8, 1.0, -1.0)
    res = pmw.pmw_release(z, pmw.parity_queries(4, 2), ZCDP(10.0), rng=1)
    assert res.updates > 0 and np.max(np.abs(res.answers[:4] - 0.6)) < 0.1
