"""Tiny runs of the Bernstein et al. (2017) figures: columns, plots, qualitative shape."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from reproductions.bernstein2017.cli_figures import add_parser
from reproductions.bernstein2017.figures import fig1a, fig1b, fig1c, fig3a

pytestmark = pytest.mark.slow  # end-to-end runs: the second tier (pytest -m slow)


def test_fig1a_mse_decreases_with_n(tmp_path):
    df = fig1a(T=4, k=3, Ns=(1_000, 100_000), epsilons=(1.0, 3.0), trials=1, out_dir=tmp_path)
    assert (tmp_path / "bernstein_fig1a.png").stat().st_size > 0
    assert {"N", "epsilon", "trial", "mse_naive_mle", "mse_noisy", "eq4_sampling"} <= set(df)
    assert len(df) == 4
    for _, d in df.groupby("epsilon"):
        d = d.sort_values("N")
        assert d.mse_noisy.is_monotonic_decreasing and d.mse_naive_mle.is_monotonic_decreasing
        assert d.eq4_privacy.iloc[0] / d.eq4_privacy.iloc[1] == pytest.approx(100**2)
    # y/N is unbiased with the Eq. (4) MSE: within a factor 2 of the prediction here
    ratio = df.mse_noisy / (df.eq4_sampling + df.eq4_privacy)
    assert ratio.between(0.5, 2.0).all()
    again = fig1a(T=4, k=3, Ns=(1_000,), epsilons=(1.0,), trials=1)
    assert again.mse_noisy.iloc[0] == df.mse_noisy.iloc[0]  # same seed, same numbers


def test_fig1b_kl_decreases_with_n(tmp_path):
    df = fig1b(T=4, k=3, p=0.6, Ns=(1_000, 100_000), epsilon=1.0, trials=1, rng=1, out_dir=tmp_path)
    assert (tmp_path / "bernstein_fig1b.png").exists()
    assert {"N", "project", "kl", "converged"} <= set(df)
    assert set(df.project) == {True, False} and len(df) == 4
    assert (df.kl >= -1e-9).all()
    for _, d in df.groupby("project"):
        assert d.sort_values("N").kl.is_monotonic_decreasing


def test_fig1c_true_statistics_small_lambda(tmp_path):
    df = fig1c(
        T=4, k=3, N=20_000, epsilon=0.5, lambdas=(1e-6, 1.0), trials=1, rng=2, out_dir=tmp_path
    )
    assert (tmp_path / "bernstein_fig1c.png").exists()
    assert {"lam", "statistics", "kl", "iterations"} <= set(df)
    kl = df.set_index(["statistics", "lam"]).kl
    assert kl["true", 1e-6] < 0.01  # true statistics, tiny lambda: near the truth
    assert kl["true", 1.0] > 10 * kl["true", 1e-6]  # strong regularisation underfits
    assert kl["noisy", 1e-6] >= kl["true", 1e-6]


def test_fig3a_scatter(tmp_path):
    df = fig3a(T=4, k=3, p=0.6, N=2_000, epsilon=0.2, rng=1, out_dir=tmp_path)
    assert (tmp_path / "bernstein_fig3a.png").exists()
    assert set(df.learner) == {"naive", "cgm", "nonprivate"}
    n_cells = df[df.learner == "naive"].shape[0]
    assert n_cells % 9 == 0 and len(df) == 3 * n_cells
    assert np.allclose(df.groupby(["learner", "clique"]).inferred.sum(), 1.0)
    err = ((df.inferred - df.true) ** 2).groupby(df.learner).mean()
    assert err["nonprivate"] < err["naive"]  # 2000 records beat |C|/0.2 Laplace noise


def test_cli_quick(tmp_path, capsys):
    parser = argparse.ArgumentParser(prog="reproductions bernstein2017")
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["figures", "fig1c", "--quick", "--out", str(tmp_path)])
    args.func(args)
    assert (tmp_path / "bernstein_fig1c.csv").exists()
    assert (tmp_path / "bernstein_fig1c.png").exists()
    assert "[fig1c]" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        parser.parse_args(["figures", "fig2"])
