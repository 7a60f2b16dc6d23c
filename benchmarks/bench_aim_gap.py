"""Where ``pgm-dp fit --data`` loses to AIM on the real tables: the estimator or the release.

``python benchmarks/bench_aim_gap.py --data fair nass --eps 1 --seeds 1 [--cgm]`` fits each
table of ``bench_realdata.py`` (same training split, declared domain, seed) with
:func:`pgm_dp.table.fit.fit_table` in this process, pure ε and at ``(ε, 1e-9)``, and scores
several estimates **of the same release** by their mean 2-way total variation distance to
the training data on the prepared (compressed) domain:

* ``naive``: AIM's last in-loop estimate, the naive MLE (Bernstein et al. 2017, Sec. 3.1),
  every table weighed alike;
* ``least squares``: that estimate refined by 1,000 steps of Private-PGM's mirror descent
  on the noise-weighted L2 loss (McKenna et al. 2019, Alg. 1), the default fit before the
  floor; ``floored``: the default fit (mixed with the private independent model,
  :func:`pgm_dp.table.check.floored_model`);
* ``mbi``: mbi's own ``MirrorDescent`` (1,000 steps) on the same measurements, one by one;
* with ``--cgm``: CGM-EM (``pgm_dp.learners.cgm.CGMEM``) with its default priors, and with
  the priors off (``prior_precision`` 1e-8, ``pseudo_count`` 0).

Equal scores across the estimators put the gap to AIM in the release (what was measured
and at what noise), not in the estimator. Each row also gives the tables measured ``k``
(one-way tables included) and, for the pure path, ``k* = ε² / (4 ρ)`` with ``ρ`` the zCDP
that ``(ε, 1e-9)`` converts to: ``k`` tables of the Laplace mechanism at ``ε / k`` each have
per-cell variance ``2 k² / ε²``, ``k`` of the Gaussian at ``ρ / k`` each ``k / (2 ρ)``, equal
at ``k = k*``; the pure path's noise is ``sqrt(k / k*)`` times AIM's at the same ``k``.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from _realdata_data import DATASETS, load, split  # noqa: E402

from pgm_dp.models import MarkovRandomField  # noqa: E402
from pgm_dp.privacy import ApproxDP, PureDP, zcdp_rho_within  # noqa: E402
from pgm_dp.select.aim import model_marginals  # noqa: E402
from pgm_dp.select.estimators import refine_noise_weighted  # noqa: E402
from pgm_dp.table.check import floored_model  # noqa: E402
from pgm_dp.table.fit import fit_table  # noqa: E402
from pgm_dp.tables import contingency_table  # noqa: E402

DELTA = 1e-9


def pair_tvd(dom, codes: np.ndarray, marginal) -> float:
    """Mean total variation distance over every pair of ``dom`` between ``codes`` (the
    prepared training codes) and ``marginal(clique)``."""
    out = []
    for a, b in itertools.combinations(dom.attributes, 2):
        shape = dom.sizes((a, b))
        truth = contingency_table(codes, [dom.index(a), dom.index(b)], shape) / len(codes)
        out.append(0.5 * np.abs(truth - np.asarray(marginal((a, b))).reshape(shape)).sum())
    return float(np.mean(out))


def of_model(model):
    return lambda c: model_marginals(model, [c])[0]


def mbi_estimate(fit, iters: int = 1000):
    """mbi's ``MirrorDescent`` on the fit's measurements (one by one, each with its noise's
    standard deviation), as a marginal function; ``None`` without mbi."""
    try:
        import mbi

        from pgm_dp.compare.peers import calibrated
    except ImportError:
        return None
    dom = fit.plan.domain
    mdom = mbi.Domain(tuple(dom.attributes), tuple(dom.sizes(dom.attributes)))
    m = fit.selection.measurements
    meas = [
        mbi.LinearMeasurement(np.ravel(y).astype(float), tuple(c), stddev=math.sqrt(n.variance))
        for c, y, n in zip(m.cliques, m.tables(), m.noise_models(), strict=True)
    ]
    model = mbi.estimation.MirrorDescent().estimate(mdom, meas, iters=iters)
    return calibrated(mbi, model, {}, mdom).marginal


def scores(fit, codes: np.ndarray, cgm: bool) -> dict:
    """The estimates of the module docstring, each scored by :func:`pair_tvd`."""
    rel, sel, dom = fit.release, fit.selection, fit.plan.domain
    least, _ = refine_noise_weighted(sel.model, rel, 1000)
    out = {
        "naive": pair_tvd(dom, codes, of_model(sel.model)),
        "least squares": pair_tvd(dom, codes, of_model(least)),
        "floored": pair_tvd(dom, codes, of_model(floored_model(least, rel))),
    }
    marginal = mbi_estimate(fit)
    out["mbi"] = pair_tvd(dom, codes, marginal) if marginal is not None else float("nan")
    if cgm:
        from pgm_dp.learners.cgm import CGMEM

        for name, kw in (("cgm", {}), ("cgm, no prior", {"prior_precision": 1e-8,
                                                          "pseudo_count": 0.0})):  # fmt: skip
            model = CGMEM(**kw).fit(rel, MarkovRandomField(dom, rel.cliques)).model
            out[name] = pair_tvd(dom, codes, of_model(model))
    return out


def one(name: str, eps: float, seed: int, pure: bool, cgm: bool) -> dict:
    codes, sizes = load(name)
    train, _ = split(codes, seed=0)
    spec = {c: {"categories": list(range(v)), "missing": False} for c, v in sizes.items()}
    budget = PureDP(eps) if pure else ApproxDP(eps, DELTA)
    start = time.process_time()
    fit = fit_table(train, spec, budget=budget, rng=seed)
    cpu = time.process_time() - start
    prepared = fit.plan.encode(train)
    prepared = np.asarray(getattr(prepared, "array", prepared))
    k = len(fit.selection.measurements.cliques)
    k_star = eps**2 / (4 * zcdp_rho_within(ApproxDP(eps, DELTA)))
    row = {"data": name, "eps": eps, "seed": seed, "path": "pure" if pure else "delta",
           "k": k, "k*": k_star if pure else float("nan"), "cpu_s": cpu}  # fmt: skip
    return row | scores(fit, prepared, cgm)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", nargs="+", default=["fair", "nass"], choices=sorted(DATASETS))
    ap.add_argument("--eps", type=float, nargs="+", default=[1.0])
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--cgm", action="store_true", help="CGM-EM on the same releases (slow)")
    a = ap.parse_args(argv)
    rows = [
        one(d, e, s, pure, a.cgm)
        for d in a.data
        for e in a.eps
        for s in range(a.seeds)
        for pure in (True, False)
    ]
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in rows:
        cells = [f"{r[k]:.4f}" if isinstance(r[k], float) else str(r[k]) for k in keys]
        print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
