"""SBC ranks (Talts et al. 2018, Algorithm 1) on cases whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chisquare

from reproductions.bayes.experiments import plot_sbc, run_sbc, sbc_ranks

pytestmark = pytest.mark.slow  # end-to-end runs: the second tier (pytest -m slow)


def test_ranks_count_draws_below_the_truth():
    draws = np.array([[0.1, 5.0], [0.3, 6.0], [0.2, 7.0]])
    assert sbc_ranks(draws, np.array([0.25, 1.0])).tolist() == [2, 0]
    assert sbc_ranks(draws, np.array([9.0, 9.0])).tolist() == [3, 3]
    with pytest.raises(ValueError, match="draws"):
        sbc_ranks(draws, np.zeros(3))


def _normal_ranks(post_sd_factor: float, reps: int = 2000, draws: int = 19) -> np.ndarray:
    """theta ~ N(0, 1), y ~ N(theta, 1): the posterior is N(y / 2, 1 / 2); a factor != 1
    makes it too narrow or too wide."""
    rng = np.random.default_rng(0)
    theta = rng.normal(size=reps)
    y = theta + rng.normal(size=reps)
    post = y / 2 + post_sd_factor * np.sqrt(0.5) * rng.normal(size=(draws, reps))
    return sbc_ranks(post, theta)


def test_exact_posterior_gives_uniform_ranks_and_a_narrow_one_does_not():
    exact = np.bincount(_normal_ranks(1.0), minlength=20)
    narrow = np.bincount(_normal_ranks(0.5), minlength=20)
    assert chisquare(exact).pvalue > 1e-3
    assert chisquare(narrow).pvalue < 1e-6
    assert narrow[0] + narrow[-1] > 3 * (exact[0] + exact[-1]) / 2  # the U shape


def test_plot_sbc_writes_a_png(tmp_path):
    ranks = np.random.default_rng(1).integers(0, 100, size=(30, 12))
    path = plot_sbc(ranks, 99, tmp_path / "sbc.png", "test")
    assert path.exists() and path.stat().st_size > 0


def test_run_sbc_end_to_end(tmp_path):
    ranks, plot = run_sbc("gaussian", 1.0, releases=2, N=300, draws=99, progress=False,
                          out_dir=tmp_path)  # fmt: skip
    assert ranks.shape == (2, 12) and ranks.min() >= 0 and ranks.max() <= 99
    assert plot.exists() and (tmp_path / "bayes_sbc_coverage.csv").exists()
