"""Any column name reaches every output of ``pgm-dp posterior``: ``posterior.nc``,
``summary.csv`` and the plot (names that xarray or HDF5 read as something else included)."""

import numpy as np
import pandas as pd
import pytest

from pgm_dp import Domain
from pgm_dp.bayes.labels import dim_name, posterior_dims
from pgm_dp.bayes.model import site_name
from pgm_dp.cli import main

NAMES = ["self", "a/b", ".", "index"]


def test_names_are_spelled_apart_and_safely():
    spelled = [dim_name(n) for n in NAMES]
    assert len(set(spelled)) == len(NAMES) and all("/" not in s for s in spelled)
    assert spelled[0] == "self_" and site_name(("self", "a/b")) == "marginal:self_,a\u2215b"


def test_the_posterior_layout_writes_and_summarises_whatever_the_names(tmp_path):
    """The dims and sites of :func:`posterior_dims` through netCDF and ``summary`` (the
    steps that failed on ``self``, ``/`` and ``.``), on draws of the right shapes."""
    xr = pytest.importorskip("xarray")
    pytest.importorskip("h5netcdf")
    arviz_stats = pytest.importorskip("arviz_stats")
    from arviz_base import from_dict

    dom = Domain.from_dict({n: ["x", "y"] for n in NAMES})
    cliques = [("self", "a/b"), (".",), ("index",), ("self",)]
    draws = {site_name(c): np.full((2, 5, *dom.sizes(c)), 0.25) for c in cliques}
    dims, coords = posterior_dims(dom, cliques, draws)
    idata = from_dict({"posterior": draws}, dims=dims, coords=coords)
    idata.to_netcdf(tmp_path / "p.nc", engine="h5netcdf")
    tree = xr.open_datatree(tmp_path / "p.nc", engine="h5netcdf")
    assert tree.posterior[site_name(("self", "a/b"))].shape == (2, 5, 2, 2)
    summary = arviz_stats.summary(idata, var_names=list(draws), round_to="none")
    assert len(summary) == 4 + 2 + 2 + 2


@pytest.mark.slow  # a posterior of four variables: a minute, mostly compilation
def test_posterior_writes_every_output_whatever_the_column_names(tmp_path, capsys):
    xr = pytest.importorskip("xarray")
    pytest.importorskip("h5netcdf")
    rng = np.random.default_rng(0)
    df = pd.DataFrame({n: rng.choice(["x", "y"], 400) for n in NAMES})
    df.to_csv(tmp_path / "d.csv", index=False)
    cliques = ["self,a/b", ".", "index", "self"]
    release = ["release", "--data", str(tmp_path / "d.csv"), "--cliques", *cliques,
               "--epsilon", "1", "--seed", "0", "--out", str(tmp_path / "r.json")]  # fmt: skip
    assert main(release) == 0
    out = tmp_path / "o"
    assert main(["posterior", "--release", str(tmp_path / "r.json"), "--method", "laplace",
                 "--draws", "20", "--chains", "2", "--out", str(out)]) == 0  # fmt: skip
    tree = xr.open_datatree(out / "posterior.nc", engine="h5netcdf")
    assert tree.posterior[site_name(("self", "a/b"))].shape == (2, 20, 2, 2)
    summary = pd.read_csv(out / "summary.csv", index_col=0)
    assert any(str(i).startswith("marginal:self_,a\u2215b") for i in summary.index)
