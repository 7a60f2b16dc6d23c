"""PrIsing's release against the support attack on objective perturbation, and its grid.

Objective perturbation (Chakraborty et al. 2024, Algorithm 1) is private for noise ``b`` with
a density (Theorem 3.1's change of variables). A full-precision root computed from lattice
noise is not: ``b(s) = -(n L_s(β̂) + Δ β̂)`` lands on the lattice for the true ``s`` only.
The release is therefore the cell of ``β̂`` on a public grid, decided exactly from ``b``
(``pgm_dp.ising.prising_cells``).
"""

from __future__ import annotations

import json
import math

import mpmath
import networkx as nx
import numpy as np
import pandas as pd
import pytest

from pgm_dp.cli import main
from pgm_dp.errors import PrivacyParameterError
from pgm_dp.ising import (
    erdos_renyi_graph,
    gibbs_ising,
    prising,
    prising_batch,
    prising_calibration,
    pseudo_likelihood_score,
    scale_erdos_renyi,
)
from pgm_dp.privacy import Accountant, PureDP
from pgm_dp.privacy.audit import audit_lattice_support
from pgm_dp.privacy.lattice import plan_gaussian, plan_laplace

mpmath.mp.prec = 300

# -- the support attack (fails on a full-precision root of lattice noise) -----------------------

_TRIALS = 3000  # releases per input; enough to refute eps = 5 when the attack works


def _attack_setting():
    n, p = 200, 0.1
    J = scale_erdos_renyi(erdos_renyi_graph(n, p, rng=11), p)
    s = gibbs_ising(J, n_chains=1, n_sweeps=50, rng=12, beta=1.5)[0]
    s2 = s.copy()
    s2[0] = -s2[0]  # neighbours: one node's outcome flipped
    return J, s, s2


def _noise_if(guess, est, J, Delta):
    """The attacker's statistic: the noise ``b`` a release implies if the input were ``guess``
    (NaN at the boundary, where the release does not pin ``b`` down)."""
    n = guess.size
    out = np.full(est.shape, np.nan)
    ok = np.isfinite(est) & (est > 0)
    out[ok] = -(n * pseudo_likelihood_score(est[ok], guess, J) + Delta * est[ok])
    return out


@pytest.mark.parametrize("delta", [0.0, 0.005])
def test_support_attack_does_not_refute_the_claim(delta):
    """n = 200, ε = 5, neighbours differ in one node; 3000 releases each. The attacker
    reconstructs ``b`` under the guess ``s`` (the first input) and tests whether it lies on
    the lattice a lattice-noise PrIsing of this scale uses (``2^20 <= scale/g < 2^21``
    Laplace, ``2^10`` Gaussian; the ``sample_lattice_*`` spacings), within 1e-10. On a
    full-precision root this refutes the claim (3000 hits against 0; Laplace ε = 5: ε̂ = 5.9,
    δ̂ = 0.59 at ε = 5; Gaussian (5, 0.005) the same). On the grid release: 0 hits against 0.
    Fixed seeds; false-alarm rate ``α = 1e-3`` (Clopper-Pearson, ``α/4`` per bound)."""
    J, s, s2 = _attack_setting()
    eps = 5.0
    cal = prising_calibration(J, eps, delta)
    if delta == 0:
        spacing = plan_laplace(cal.noise_scale, 1.0, size=1, integer_input=True).spacing
    else:
        spacing = plan_gaussian(cal.noise_scale, 0.5, size=1, integer_input=True).spacing
    est_a = prising_batch(np.tile(s, (_TRIALS, 1)), J, eps, delta, rng=1)
    est_b = prising_batch(np.tile(s2, (_TRIALS, 1)), J, eps, delta, rng=2)
    stat_a = _noise_if(s, est_a, J, cal.Delta)
    stat_b = _noise_if(s, est_b, J, cal.Delta)
    res = audit_lattice_support(stat_a, stat_b, spacing, epsilon=eps, delta=delta, alpha=1e-3)
    assert res.consistent_with_claim(), res


# -- the grid and the exact cell ----------------------------------------------------------------


def _small_graph() -> np.ndarray:
    g = nx.circulant_graph(12, [1, 2])
    g.add_edge(0, 6)
    return nx.to_numpy_array(g) / 4.0


_S12 = np.array([1, 1, 1, 1, 1, -1, 1, 1, -1, -1, -1, 1.0])


def _b_of_beta(J, sig, Delta):
    """``b_σ(β) = Σ_i m_i (σ_i - tanh(β m_i)) - Δβ`` in 300-bit arithmetic (exact ``m``)."""
    n = sig.size
    m = [mpmath.fsum(mpmath.mpf(float(J[i, j])) * int(sig[j]) for j in range(n)) for i in range(n)]
    D = mpmath.mpf(Delta)

    def b(beta):
        return mpmath.fsum(m[i] * (int(sig[i]) - mpmath.tanh(beta * m[i])) for i in range(n)) - (
            D * beta
        )

    return b


def _reference_cell(b_of, b, g):
    """``None`` (boundary, ``b >= b_σ(0)``) or ``k`` with ``b_σ((k+1)g) <= b < b_σ(kg)``."""
    G = mpmath.mpf(g)
    if b >= b_of(0):
        return None
    hi = 1
    while b < b_of(hi * G):
        hi *= 2
    lo = 0  # b < b(lo g), b >= b(hi g)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if b < b_of(mid * G) else (lo, mid)
    return lo


@pytest.mark.parametrize("delta", [0.0, 0.01])
@pytest.mark.parametrize("resolution", [1e-3, 0.05])
def test_release_is_the_exact_cell_on_the_public_grid(delta, resolution):
    """The release is ``(k + 1/2) g`` for the cell ``k`` of 300-bit arithmetic applied to
    the same noise draw, or the boundary value; 12 seeds each."""
    from pgm_dp.ising.prising_cells import draw_units

    J = _small_graph()
    eps = 2.0
    cal = prising_calibration(J, eps, delta, resolution=resolution)
    b_of = _b_of_beta(J, _S12, cal.Delta)
    for seed in range(12):
        res = prising(_S12, J, eps, delta, rng=seed, resolution=resolution)
        z = int(draw_units(cal.mechanism, 1, np.random.default_rng(seed))[0])
        k = _reference_cell(b_of, z * mpmath.mpf(cal.noise_spacing), resolution)
        assert res.resolution == resolution
        if k is None:
            assert res.boundary and res.estimate == 0.0
        else:
            assert not res.boundary and res.estimate == (k + 0.5) * resolution


def test_cells_are_decided_exactly_next_to_grid_points():
    """Noise one lattice step (~1e-11) either side of ``b_σ(g_k)``: the cell follows the
    exact comparison whatever the float root's starting cell."""
    from pgm_dp.ising.prising import _fields
    from pgm_dp.ising.prising_cells import find_cells

    J, g = _small_graph(), 0.01
    cal = prising_calibration(J, 1.0, 0.0, resolution=g)
    h = cal.noise_spacing
    b_of = _b_of_beta(J, _S12, cal.Delta)
    m = _fields(J, _S12[None, :])
    zs, want = [], []
    for k in (1, 37, 63, 150):
        centre = int(mpmath.floor(b_of(k * mpmath.mpf(g)) / mpmath.mpf(h)))
        for dz in (-1, 0, 1, 2):
            zs.append(centre + dz)
            want.append(_reference_cell(b_of, (centre + dz) * mpmath.mpf(h), g))
    z = np.array(zs, dtype=np.int64)
    for start in (np.repeat([1, 37, 63, 150], 4) * g, np.zeros(z.size), np.full(z.size, 9.9)):
        k, bnd = find_cells(m, _S12[None, :], z, h, cal.Delta, g, start)
        assert not bnd.any()
        assert list(k) == want
    sides = np.array(want) - np.repeat([1, 37, 63, 150], 4)
    assert set(sides) == {-1, 0}  # both sides of each grid point were exercised


# -- calibration, validation, CLI ---------------------------------------------------------------


def test_calibration_keeps_the_claim_and_covers_the_lattice_error():
    J = _small_graph()
    for delta in (0.0, 1e-3):
        c = prising_calibration(J, 2.0, delta)
        assert 0 < c.eta < 1e-6 and c.epsilon_noise == 2.0 - 3 * c.eta
        assert c.budget.epsilon == 2.0 and c.resolution == 1e-3
        if delta:
            assert c.delta_noise == pytest.approx(delta / (1 + c.eta), rel=1e-11)
            assert c.delta_noise < delta
            gamma = c.zeta * math.sqrt(8 * math.log(2 / c.delta_noise) + 4 * c.epsilon_noise)
            assert c.noise_scale == pytest.approx(gamma / c.epsilon_noise, rel=1e-14)
        else:
            assert c.noise_scale == pytest.approx(2 * c.zeta / c.epsilon_noise, rel=1e-14)
        assert c.noise_spacing == c.noise_scale * 2.0**-40


@pytest.mark.parametrize("resolution", [0.0, -1e-3, math.nan, math.inf, True, "x", 1e-12])
def test_bad_or_too_fine_resolution_rejected_before_charging(resolution):
    acc = Accountant(PureDP(10.0))
    with pytest.raises(PrivacyParameterError, match="resolution"):
        prising(_S12, _small_graph(), 1.0, 0.0, rng=0, accountant=acc, resolution=resolution)
    assert acc.charges == ()


def test_cli_estimate_writes_the_grid_value_only(tmp_path):
    edges = [(i, (i + d) % 12) for i in range(12) for d in (1, 2)]
    pd.DataFrame(edges, columns=["source", "target"]).to_csv(tmp_path / "g.csv", index=False)
    signs = [1 if i % 3 else -1 for i in range(12)]
    pd.DataFrame({"node": range(12), "outcome": signs}).to_csv(tmp_path / "o.csv", index=False)
    out = tmp_path / "e.json"
    argv = ["prising", "estimate", "--graph", str(tmp_path / "g.csv"), "--outcomes",
            str(tmp_path / "o.csv"), "--epsilon", "50", "--seed", "3", "--resolution", "0.01",
            "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    doc = json.loads(out.read_text())
    assert doc["resolution"] == 0.01
    k = doc["beta_private"] / 0.01 - 0.5
    assert doc["boundary"] or abs(k - round(k)) < 1e-9
