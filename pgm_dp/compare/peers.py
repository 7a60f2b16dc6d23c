"""Private-PGM's MST and AIM (on mbi 2.x) beside pgm_dp's learners: ``pgm-dp compare --data
FILE --peers``.

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

The fitted model is returned as its calibrated junction tree
(:class:`~pgm_dp.compare.calibrated_tree.CalibratedTree`) on the original domain: a compressed
value's mass is spread evenly over the values it merged, which is what MST's decompression
samples. These are the peers' guarantees, (ε, δ)-DP through zCDP with continuous Gaussian
noise, as their authors wrote them: a comparison (nothing here is charged to an accountant).
The zCDP conversion, the exponential mechanism and the Gaussian draws are the privacy layer's
(:mod:`pgm_dp.privacy`): the exponential mechanism its exact sampler, which draws other
choices than ``mechanism.py``'s floating-point one for a seed, from the same distribution up
to the rounding of the scores.

:func:`add_peers` scores them as :func:`pgm_dp.compare.table.compare_on_table` scores
pgm_dp's learners, on the same split of the table. Needs mbi 2.x (``pip install
"mbi>=2.0"``, the ``bench`` extra); only imported when a peer runs.
"""

from __future__ import annotations

import itertools
import math
import time
import warnings
from typing import Any

import numpy as np

from ..privacy import ApproxDP, PureDP, exponential_mechanism, sample_gaussian, zcdp_rho_within
from .calibrated_tree import CalibratedTree

__all__ = ["PEERS", "PEER_DELTA", "check_peers", "fit_peer", "add_peers", "mst", "aim"]

#: The peers :func:`add_peers` runs.
PEERS = ("mst", "aim")
#: Equal-width bins the peers get for a number column that pgm_dp cuts at private quantiles
#: (``prepare_plan``'s default number of quantile bins).
N_BINS = 8
#: δ of the peers when the comparison runs under pure ε (theirs is an (ε, δ) guarantee).
PEER_DELTA = 1e-9


def check_peers(methods) -> tuple[str, ...]:
    """The peers asked for (all of :data:`PEERS` when none is named), after checking that mbi
    2.x is installed: an ImportError with the way to install it, before any work."""
    import importlib.util

    methods = tuple(methods) or PEERS
    bad = [m for m in methods if m not in PEERS]
    if bad:
        raise ValueError(f"unknown peers {bad}; choose from {list(PEERS)}")
    if importlib.util.find_spec("mbi") is None:
        raise ImportError('the peers need mbi 2.x (Private-PGM): pip install "mbi>=2.0"')
    return methods


def _zcdp_rho(epsilon: float, delta: float) -> float:
    """The largest ``rho`` whose zCDP implies (ε, δ)-DP (Canonne, Kamath & Steinke 2020,
    Prop. 12 minimised over the Rényi order: ``cdp2adp.py``'s conversion), from the privacy
    layer (:func:`~pgm_dp.privacy.zcdp_rho_within`)."""
    return zcdp_rho_within(ApproxDP(epsilon, delta))


def _choose(rng, scores: dict, eps: float, sensitivity: float):
    """A key drawn with probability ``∝ exp(eps q / (2 sensitivity))`` (``mechanism.py``'s
    exponential mechanism), by the privacy layer's exact sampler
    (:func:`~pgm_dp.privacy.exponential_mechanism`, on lattice-rounded scores)."""
    keys = list(scores)
    q = [float(scores[k]) for k in keys]
    return keys[exponential_mechanism(q, sensitivity=sensitivity, budget=PureDP(eps), rng=rng)]


def _measure(mbi, data, cliques, sigma, rng):
    """Gaussian measurements of ``cliques`` with ``sigma`` each."""
    out = []
    for cl in cliques:
        x = np.asarray(data.project(cl).datavector())
        y = x + sample_gaussian(sigma, x.size, rng)
        out.append(mbi.LinearMeasurement(y, tuple(cl), stddev=sigma))
    return out


def _estimate(mbi, domain, measurements, iters, warm=None):
    return mbi.estimation.MirrorDescent().estimate(
        domain, measurements, iters=iters, warm_start=warm
    )


def mst(mbi, data, epsilon: float, delta: float, rng):
    """MST (``mechanisms/mst.py``); returns the model and the compression mapping."""
    attrs = list(data.domain.attributes)
    rho = _zcdp_rho(epsilon, delta)
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
        e = _choose(rng, cand, eps_em, 1.0)
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
    rho = _zcdp_rho(epsilon, delta)
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
            cl: w
            for cl, w in candidates.items()
            if cl in free or hypothetical_model_size(dom, list(model.cliques) + [cl]) <= size_limit
        }
        errors = {}
        for cl, w in small.items():
            bias = math.sqrt(2 / math.pi) * sigma * dom.size(cl)
            errors[cl] = w * (np.abs(answers[cl] - project(cl)).sum() - bias)
        cl = _choose(rng, errors, eps, max(abs(w) for w in small.values()))
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
                merged = np.bincount(m)[m].reshape([-1 if k == ax else 1 for k in range(t.ndim)])
                t = np.take(t, m, axis=ax) / merged
        tables.append(t)
    index = {cl: i for i, cl in enumerate(nodes)}
    edges = [(index[a], index[b]) for a, b in jtree.edges]
    return CalibratedTree(domain.attributes, domain.shape, nodes, tables, edges)


def fit_peer(
    method: str,
    codes: np.ndarray,
    sizes: dict,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    max_model_size: float = 80.0,
    max_iters: int = 1000,
) -> CalibratedTree:
    """Fit peer ``method`` (``"mst"`` or ``"aim"``) to ``codes`` (``(n, d)`` ints, columns in
    the order of ``sizes``, ``{column: number of states}``) at (``epsilon``, ``delta``).

    Args:
        method: one of :data:`PEERS`.
        codes: the training records as codes.
        sizes: the domain, in column order.
        epsilon, delta: the peer's (ε, δ) guarantee (through zCDP, its own conversion).
        rng: the generator of every noise draw and choice.
        max_model_size: AIM's model-size limit (MB).
        max_iters: AIM's mirror-descent steps per round.

    Returns:
        The model's calibrated junction tree on the domain of ``sizes``.
    """
    import jax

    jax.config.update("jax_enable_x64", True)
    import mbi

    # mbi's advice against JAX's persistent cache is for sweeps; one comparison keeps it
    warnings.filterwarnings("ignore", message="JAX persistent compilation cache is enabled")
    import pandas as pd

    domain = mbi.Domain(tuple(sizes), tuple(int(s) for s in sizes.values()))
    frame = pd.DataFrame(np.asarray(codes), columns=list(sizes))
    data = mbi.Dataset({c: frame[c].to_numpy() for c in sizes}, domain)
    if method == "mst":
        model, mapping = mst(mbi, data, epsilon, delta, rng)
    elif method == "aim":
        model, mapping = aim(mbi, data, epsilon, delta, rng, max_model_size, max_iters)
    else:
        raise ValueError(f"unknown peer {method!r}; choose from {list(PEERS)}")
    return calibrated(mbi, model, mapping, domain)


def _public_spec(df, spec) -> dict:
    """``spec`` with every number column that ``prepare_plan`` would cut at private
    quantiles cut into as many equal-width bins of its bounds instead (public: the peers'
    coded table costs no budget)."""
    out = dict(spec or {})
    for name in df.columns:
        entry = out.get(name, {})
        if not isinstance(entry, dict) or set(entry) & {"bins", "categories", "n_bins"}:
            continue
        if "bounds" in entry or "quantiles" in entry or df[name].dtype.kind in "iuf":
            rest = {k: v for k, v in entry.items() if k != "quantiles"}
            out[name] = {**rest, "n_bins": entry.get("quantiles", N_BINS)}
    return out


def add_peers(
    result: Any,
    df: Any,
    spec: Any,
    *,
    epsilons,
    delta: float | None,
    seed: int,
    test_fraction: float,
    methods=PEERS,
    out_dir=None,
    plot=None,
    **prepare_options: Any,
):
    """``result`` (a :class:`~pgm_dp.compare.table.DataComparison` of ``df``) with a row per
    peer and ε, scored as its learners are, its CSV and plot written again.

    The peers fit the training part of the same split (``seed``, ``test_fraction``), coded on
    the full domain of the table's preparation without its private steps (categories and
    bins declared in ``spec`` or read as ``prepare_options`` say; a number column that
    pgm_dp cuts at private quantiles in :data:`N_BINS` equal-width bins of its bounds; no
    merging): the coded table a user would hand them. Under pure ε (``delta=None``) they
    run at (ε, :data:`PEER_DELTA`). ``seconds`` is each peer's whole CPU time (selection,
    measurements, estimation).
    """
    import pandas as pd

    from ..errors import PrivacyParameterError
    from ..prepare.table import NonPrivateWarning, prepare_plan
    from ..table.synth import full_codes
    from .table import DataComparison, _encodable, _finish, heldout_scores, split_table

    train, test = split_table(df, test_fraction, seed)
    try:
        with warnings.catch_warnings():  # the same reads as the fits': said once, by them
            warnings.simplefilter("ignore", NonPrivateWarning)
            options = {**prepare_options, "compress": False}
            plan = prepare_plan(train, _public_spec(train, spec), **options)
    except PrivacyParameterError as err:
        raise PrivacyParameterError(f"the peers' coded table: {err}") from None
    codes = full_codes(plan, train)
    test_codes, left_out = _encodable(plan, test)
    sizes = dict(zip(plan.names, plan.full_domain.shape, strict=True))
    rows = []
    for k, eps in enumerate(epsilons):
        for method in methods:
            start = time.process_time()
            gen = np.random.default_rng([seed, k, PEERS.index(method)])
            tree = fit_peer(method, codes, sizes, eps, delta or PEER_DELTA, gen)
            seconds = time.process_time() - start
            scores = heldout_scores(tree.to_model(), test_codes)
            rows.append(
                {
                    "epsilon": eps,
                    "learner": f"{method} (mbi)",
                    **scores,
                    "seconds": seconds,
                    "n_test": len(test_codes),
                    "left_out": left_out,
                }
            )
    runs = pd.concat([result.runs, pd.DataFrame(rows)], ignore_index=True)
    if out_dir is None:
        return DataComparison(runs)
    return _finish(runs, out_dir, plot)
