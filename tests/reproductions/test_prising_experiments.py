"""Quick-mode smoke tests of the PrIsing experiments (tables sane, plots written, CLI wired)."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from pgm_dp.errors import DomainError
from reproductions.chakraborty2024.cli import add_parser
from reproductions.chakraborty2024.prising import fig1, mse_vs_density, mse_vs_n, real_networks

pytestmark = pytest.mark.slow  # end-to-end runs: the second tier (pytest -m slow)


def test_fig1_quick(tmp_path):
    png = tmp_path / "fig1.png"
    df = fig1(quick=True, rng=1, plot=png)
    assert png.stat().st_size > 0
    assert list(df.beta) == [0.0, 1.0, 2.0]
    assert np.all(df.mple_sd >= 0) and np.all(df.priv_sd >= 0)
    assert df.priv_at_zero.between(0, 1).all()
    finite = df[df.mple_n_inf == 0]
    assert np.all(finite.mple_mean >= 0)
    # reproducible
    df2 = fig1(quick=True, rng=1)
    assert np.allclose(df.priv_mean, df2.priv_mean, equal_nan=True)


def test_mse_vs_n_quick(tmp_path):
    df = mse_vs_n(quick=True, rng=2, plot=tmp_path / "n.png")
    assert (tmp_path / "n.png").exists()
    assert set(df.epsilon) == {5.0, np.inf} and set(df.beta) == {0.5, 1.5}
    assert len(df) == 2 * 2 * 2
    assert (df.est_mse >= 0).all()


def test_mse_vs_density_quick(tmp_path):
    df = mse_vs_density(quick=True, rng=3, plot=tmp_path / "d.png")
    assert (tmp_path / "d.png").exists()
    assert np.allclose(sorted(df.p_n.unique()), sorted([60**-0.6, 60**-0.2]))
    assert (df.est_mse >= 0).all()


def test_real_networks_quick(tmp_path):
    df = real_networks(quick=True, rng=4, plot=tmp_path / "r.png")
    assert (tmp_path / "r.png").exists()
    assert set(df.network) == {"polblogs", "karate"}
    assert set(df[df.network == "polblogs"].n) == {816}
    cost = df[df.experiment == "cost"]
    assert (cost.cost >= 0).all() and len(cost) == 4
    hat = cost.groupby("network").beta.unique()
    assert all(len(v) == 1 and v[0] > 0 for v in hat)  # one beta-hat per network
    with pytest.raises(DomainError):
        real_networks(networks=("hiv",), quick=True)


def test_cli_registration(tmp_path, capsys):
    parser = argparse.ArgumentParser(prog="reproductions chakraborty2024")
    add_parser(parser.add_subparsers(dest="experiment"))
    args = parser.parse_args(["fig1", "--quick", "--seed", "5", "--out", str(tmp_path)])
    df = args.func(args)
    assert (tmp_path / "prising_fig1.csv").exists() and (tmp_path / "prising_fig1.png").exists()
    assert len(df) == 3 and "[fig1]" in capsys.readouterr().out
