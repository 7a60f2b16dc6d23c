"""Private-PGM's MST and AIM mechanisms, written here against mbi 2.x.

The mechanisms are not in mbi's wheel: they live in the ``mechanisms/`` folder of the
Private-PGM repository (``mst.py``, ``aim.py``, ``mechanism.py``, ``cdp2adp.py``, written
for mbi < 2). This module follows them step by step on mbi 2.x's API (``mbi.Dataset``,
``mbi.LinearMeasurement``, ``mbi.estimation.MirrorDescent``), with one NumPy generator for
all noise and choices:

* **MST** (McKenna, Miklau & Sheldon 2021, "Winning the NIST contest", Alg. 1): ``rho`` from
  (ε, δ) by the conversion of Canonne, Kamath & Steinke (2020, Prop. 12 and its numerical
  inverse), ``sigma = sqrt(3 / (2 rho))``; one-way Gaussian measurements (the set has
  L2 sensitivity ``sqrt(d)``, so each gets ``sigma sqrt(d)``); domain compression (values
  whose noisy count is under ``3 sigma`` merged into one); a spanning tree by ``d - 1``
  exponential-mechanism draws on the L1 errors of the one-way model's pair marginals
  (``rho / 3``); Gaussian measurements of the tree's pairs; mirror descent, 5,000 steps.
* **AIM** (McKenna et al. 2022, "AIM: an adaptive and iterative mechanism", Alg. 1):
  workload of all pairs with at most 10,000 cells, weight 1 (the script's defaults);
  ``16 d`` planned rounds, 0.9 of each round's budget on the Gaussian measurement and 0.1
  on the exponential mechanism; candidates limited to a junction tree of at most
  ``max_model_size * rho_used / rho`` MB; the budget annealing (``sigma`` halved when a
  measurement barely moves the model); mirror descent, ``max_iters`` steps, warm-started.
  The candidates' model marginals are read from the model's calibrated junction tree (the
  same numbers as ``model.project``, without compiling one variable elimination per
  candidate and round).

The fitted model is written as its calibrated junction tree (``_realdata_tree.save_tree``)
on the original domain: a compressed value's mass is spread evenly over the values it
merged, which is what MST's decompression samples.

``python benchmarks/_peers_mbi.py --method mst|aim --train CODES.csv --domain DOM.json
--epsilon 1 --delta 1e-9 --seed 0 --out tree.npz`` (no pgm_dp import: it runs in any
environment with mbi 2.x, NumPy and networkx).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys

os.environ.setdefault("JAX_ENABLE_X64", "1")
# XLA's CPU back end at optimisation level 0: every AIM round (and each MST estimate) fits a
# new clique set, so one new program is compiled per round, and compiling dominates: on Adult
# a 19-clique fit compiled in 38-68 s at the default level and 15-24 s at level 0, while its
# 1,000 mirror-descent steps ran in 0.4 s. (--xla-default keeps XLA's own level.)
FAST_COMPILE = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
if "--xla-default" not in sys.argv and FAST_COMPILE not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + FAST_COMPILE).strip()

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _realdata_tree import CalibratedTree, save_tree  # noqa: E402


def cdp_delta(rho: float, eps: float) -> float:
    """δ such that ρ-zCDP implies (ε, δ)-DP (Canonne, Kamath & Steinke 2020, Prop. 12),
    minimised over the Rényi order by bisection on its derivative."""
    if rho == 0:
        return 0.0
    amin, amax = 1.01, (eps + 1) / (2 * rho) + 2
    for _ in range(1000):
        alpha = (amin + amax) / 2
        if (2 * alpha - 1) * rho - eps + math.log1p(-1.0 / alpha) < 0:
            amin = alpha
        else:
            amax = alpha
    delta = math.exp((alpha - 1) * (alpha * rho - eps) + alpha * math.log1p(-1 / alpha))
    return min(delta / (alpha - 1.0), 1.0)


def cdp_rho(eps: float, delta: float) -> float:
    """The largest ρ whose zCDP implies (ε, δ)-DP (bisection on :func:`cdp_delta`)."""
    lo, hi = 0.0, eps + 1.0
    for _ in range(1000):
        rho = (lo + hi) / 2
        if cdp_delta(rho, eps) <= delta:
            lo = rho
        else:
            hi = rho
    return lo


def exponential_mechanism(rng, scores: dict, eps: float, sensitivity: float):
    """A key drawn with probability ``∝ exp(0.5 eps q / sensitivity)`` (``mechanism.py``)."""
    keys = list(scores)
    q = np.array([scores[k] for k in keys], dtype=float)
    logits = 0.5 * eps / sensitivity * (q - q.max())
    p = np.exp(logits - logits.max())
    return keys[rng.choice(len(keys), p=p / p.sum())]


def _measure(mbi, data, cliques, sigma, rng):
    """Gaussian measurements of ``cliques`` with ``sigma`` each."""
    out = []
    for cl in cliques:
        x = np.asarray(data.project(cl).datavector())
        y = x + rng.normal(0, sigma, size=x.size)
        out.append(mbi.LinearMeasurement(y, tuple(cl), stddev=sigma))
    return out


def _estimate(mbi, domain, measurements, iters, warm=None):
    return mbi.estimation.MirrorDescent().estimate(
        domain, measurements, iters=iters, warm_start=warm
    )


def mst(mbi, data, epsilon: float, delta: float, rng):
    """MST (``mechanisms/mst.py``); returns the model and the compression mapping."""
    attrs = list(data.domain.attributes)
    rho = cdp_rho(epsilon, delta)
    sigma = math.sqrt(3 / (2 * rho))
    log1 = _measure(mbi, data, [(a,) for a in attrs], sigma * math.sqrt(len(attrs)), rng)
    mapping = {}
    for m in log1:  # compress_domain: keep values with noisy count >= 3 sigma
        y = np.asarray(m.noisy_measurement)
        sup = y >= 3 * m.stddev
        if not sup.all():
            mapping[m.clique[0]] = np.where(sup, np.cumsum(sup) - 1, sup.sum()).astype(int)
    log1 = [m.compress(mapping, data.domain) for m in log1]
    data = data.compress(mapping)
    est = _estimate(mbi, data.domain, log1, 1000)
    weights = {}
    for a, b in itertools.combinations(attrs, 2):
        x = np.asarray(data.project((a, b)).datavector())
        weights[(a, b)] = np.abs(x - np.asarray(est.project((a, b)).datavector())).sum()
    eps_em = math.sqrt(8 * (rho / 3) / (len(attrs) - 1))
    comp = {a: a for a in attrs}

    def find(a):
        while comp[a] != a:
            a = comp[a]
        return a

    tree = []
    for _ in range(len(attrs) - 1):
        cand = {e: w for e, w in weights.items() if find(e[0]) != find(e[1])}
        e = exponential_mechanism(rng, cand, eps_em, 1.0)
        comp[find(e[0])] = find(e[1])
        tree.append(e)
    log2 = _measure(mbi, data, tree, sigma * math.sqrt(len(tree)), rng)
    return _estimate(mbi, data.domain, log1 + log2, 5000), mapping


def _closure(cliques):
    out = set()
    for cl in cliques:
        for r in range(1, len(cl) + 1):
            out.update(itertools.combinations(cl, r))
    return out


def aim(mbi, data, epsilon, delta, rng, max_model_size=80.0, max_iters=1000, max_cells=10000):
    """AIM (``mechanisms/aim.py``) on the workload of all pairs with <= max_cells cells."""
    from mbi.junction_tree import hypothetical_model_size

    dom = data.domain
    attrs = list(dom.attributes)
    workload = [cl for cl in itertools.combinations(attrs, 2) if dom.size(cl) <= max_cells]
    candidates = {cl: sum(len(set(cl) & set(w)) for w in workload) for cl in _closure(workload)}
    answers = {cl: np.asarray(data.project(cl).datavector()) for cl in candidates}
    rho = cdp_rho(epsilon, delta)
    rounds = 16 * len(attrs)
    sigma = math.sqrt(rounds / (2 * 0.9 * rho))
    eps = math.sqrt(8 * 0.1 * rho / rounds)
    oneway = [cl for cl in candidates if len(cl) == 1]
    measurements = _measure(mbi, data, oneway, sigma, rng)
    rho_used = len(oneway) * 0.5 / sigma**2
    model = _estimate(mbi, dom, measurements, max_iters)
    tree = calibrated(mbi, model, {}, dom)

    def project(cl):  # the model's counts on cl, as model.project(cl).datavector()
        return tree.marginal(cl).ravel() * float(model.total)

    terminate = False
    while not terminate:
        if rho - rho_used < 2 * (0.5 / sigma**2 + 1.0 / 8 * eps**2):
            remaining = rho - rho_used  # spend what is left in one last round
            sigma, eps = math.sqrt(1 / (2 * 0.9 * remaining)), math.sqrt(8 * 0.1 * remaining)
            terminate = True
        rho_used += 1.0 / 8 * eps**2 + 0.5 / sigma**2
        size_limit = max_model_size * rho_used / rho
        free = _closure(model.cliques)
        small = {
            cl: w for cl, w in candidates.items()
            if cl in free or hypothetical_model_size(dom, list(model.cliques) + [cl]) <= size_limit
        }  # fmt: skip
        errors = {}
        for cl, w in small.items():
            bias = math.sqrt(2 / math.pi) * sigma * dom.size(cl)
            errors[cl] = w * (np.abs(answers[cl] - project(cl)).sum() - bias)
        cl = exponential_mechanism(rng, errors, eps, max(abs(w) for w in small.values()))
        n = dom.size(cl)
        measurements += _measure(mbi, data, [cl], sigma, rng)
        z = project(cl)
        model = _estimate(mbi, dom, measurements, max_iters, warm=model)
        tree = calibrated(mbi, model, {}, dom)
        w = project(cl)
        print(f"AIM: measured {cl} ({n} cells), budget used {rho_used / rho:.3f}", flush=True)
        if np.abs(w - z).sum() <= sigma * math.sqrt(2 / math.pi) * n:
            sigma, eps = sigma / 2, eps * 2
    return _estimate(mbi, dom, measurements, max_iters, warm=model), {}


def calibrated(mbi, model, mapping, domain) -> CalibratedTree:
    """``model``'s calibrated junction tree on the original ``domain`` (one message-passing
    pass; marginals of candidates then cost no compilation, unlike ``model.project`` of a
    clique outside the model, which compiles a variable elimination per clique)."""
    from mbi import junction_tree, marginal_oracles

    jtree, _ = junction_tree.make_junction_tree(model.domain, [tuple(c) for c in model.cliques])
    nodes = list(jtree.nodes)
    pots = model.potentials.expand(nodes)
    margs = marginal_oracles.message_passing_stable(pots, 1.0)
    tables = []
    for cl in nodes:
        t = np.asarray(margs.project(cl).datavector(flatten=False), dtype=np.float64)
        for ax, a in enumerate(cl):  # undo compression: spread a merged value's mass evenly
            if a in mapping:
                m = mapping[a]
                t = np.take(t, m, axis=ax) / np.bincount(m)[m].reshape(
                    [-1 if k == ax else 1 for k in range(t.ndim)])  # fmt: skip
        tables.append(t)
    index = {cl: i for i, cl in enumerate(nodes)}
    edges = [(index[a], index[b]) for a, b in jtree.edges]
    return CalibratedTree(domain.attributes, domain.shape, nodes, tables, edges)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--method", choices=["mst", "aim"], required=True)
    ap.add_argument("--train", required=True, help="CSV of integer codes")
    ap.add_argument("--domain", required=True, help="JSON {column: size}")
    ap.add_argument("--epsilon", type=float, required=True)
    ap.add_argument("--delta", type=float, default=1e-9)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-model-size", type=float, default=80.0, help="AIM, MB")
    ap.add_argument("--max-iters", type=int, default=1000, help="AIM's mirror-descent steps")
    ap.add_argument("--out", required=True)
    ap.add_argument("--xla-default", action="store_true", help="XLA's default optimisation")
    a = ap.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_compilation_cache", False)  # mbi's advice for sweeps
    import mbi
    import pandas as pd

    sizes = json.loads(open(a.domain).read())
    frame = pd.read_csv(a.train)
    domain = mbi.Domain(tuple(sizes), tuple(int(s) for s in sizes.values()))
    data = mbi.Dataset({c: frame[c].to_numpy() for c in sizes}, domain)
    rng = np.random.default_rng(a.seed)
    if a.method == "mst":
        model, mapping = mst(mbi, data, a.epsilon, a.delta, rng)
    else:
        model, mapping = aim(mbi, data, a.epsilon, a.delta, rng, a.max_model_size, a.max_iters)
    t = calibrated(mbi, model, mapping, domain)
    save_tree(a.out, t.attrs, list(t.shape.values()), t.cliques, t.tables, t.graph.edges)
    print(f"{a.method}: {len(model.cliques)} cliques written to {a.out}", flush=True)


if __name__ == "__main__":
    main()
