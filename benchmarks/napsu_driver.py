"""NAPSU-MQ (twinify) inference on given noisy marginal releases; run in twinify's own venv.

Protocol (one long-lived process, so the benchmark can interleave it with pgm_dp): the first
stdin line is a JSON header ``{"variables": [...], "levels": [...], "cliques": [[...], ...],
"num_warmup", "num_samples", "num_chains"}``; every further line is a JSON job ``{"input":
npz path, "output": npz path, "seed": int}``; the input holds ``y`` (the stacked clique count
tables, flattened row-major in clique order, the release's cells), ``sigma`` (the Gaussian
noise sd of every cell) and ``total`` (``N``). The driver answers each job with one JSON line
``{"seconds": ..., "output": ...}`` after writing ``draws`` ``(chains, draws, cells)``: the
posterior draws of the full clique marginals (probabilities), mapped back from NAPSU-MQ's
canonical queries by enumerating the joint; or ``{"error": ...}`` when NAPSU-MQ's Laplace
step raises its ``ConvergenceException``.

NAPSU-MQ's model (Räisä et al. 2023, Eq. 6; twinify ``normal_prior_model_numpyro``): its
canonical queries (``FullMarginalQuerySet.get_canonical_queries``) drop the redundant cells
of each clique table; the noisy answers of the kept cells are the corresponding cells of
our release (same noise, same ``sigma``). Inference as in ``NapsuMQModel.fit`` with
``use_laplace_approximation=True``: ``run_numpyro_laplace_approximation`` then
``run_numpyro_mcmc_normalised`` (prior sd 10, NUTS max tree depth 12, sequential chains).
"""

from __future__ import annotations

import itertools
import json
import sys
import time

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)

import twinify.napsu_mq.maximum_entropy_inference as mei  # noqa: E402
from twinify.napsu_mq.marginal_query import FullMarginalQuerySet  # noqa: E402
from twinify.napsu_mq.markov_network import MarkovNetwork  # noqa: E402


def _setup(head: dict):
    """NAPSU-MQ's network, the index of each canonical query in our cells, and the map
    ``p(joint) -> cells``."""
    variables, levels = head["variables"], head["levels"]
    cliques = [tuple(c) for c in head["cliques"]]
    values = {v: list(range(k)) for v, k in zip(variables, levels, strict=True)}
    queries = FullMarginalQuerySet(cliques, values).get_canonical_queries()
    network = MarkovNetwork(values, queries)
    sizes = [int(np.prod([levels[variables.index(v)] for v in c])) for c in cliques]
    starts = np.cumsum([0, *sizes])
    index = []
    for q in network.flat_queries.queries:
        feats = tuple(q.features)
        clique = next(i for i, c in enumerate(cliques) if set(c) == set(feats))
        value = {f: int(x) for f, x in zip(feats, q.value, strict=True)}
        shape = [levels[variables.index(v)] for v in cliques[clique]]
        cell = np.ravel_multi_index([value[v] for v in cliques[clique]], shape)
        index.append(starts[clique] + cell)
    states = np.array(list(itertools.product(*[range(k) for k in levels])))
    phi = np.asarray(network.flat_queries(states), dtype=np.float64)  # joint -> queries
    cells = []
    for c in cliques:
        cols = [variables.index(v) for v in c]
        shape = [levels[i] for i in cols]
        idx = np.ravel_multi_index(tuple(states[:, i] for i in cols), shape)
        cells.append(np.eye(int(np.prod(shape)))[idx])
    return network, np.asarray(index), phi, np.concatenate(cells, axis=1)


def _marginals(lambdas: np.ndarray, phi: np.ndarray, cells: np.ndarray) -> np.ndarray:
    logits = lambdas @ phi.T
    logits -= logits.max(axis=-1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(axis=-1, keepdims=True)
    return p @ cells


def _fit(head: dict, setup, job: dict) -> float:
    network, index, phi, cells = setup
    data = np.load(job["input"])
    suff = jax.numpy.asarray(data["y"][index])
    n, sigma = float(data["total"]), float(data["sigma"])
    chains, draws = int(head["num_chains"]), int(head["num_samples"])
    start = time.perf_counter()
    approx_rng, mcmc_rng = jax.random.split(jax.random.PRNGKey(int(job["seed"])))
    laplace, _ = mei.run_numpyro_laplace_approximation(approx_rng, suff, n, sigma, network)
    mcmc, back = mei.run_numpyro_mcmc_normalised(
        mcmc_rng, suff, n, sigma, network, laplace,
        num_samples=draws, num_warmup=int(head["num_warmup"]), num_chains=chains,
        disable_progressbar=True,
    )  # fmt: skip
    norm = np.asarray(mcmc.get_samples()["norm_lambdas"])
    lambdas = np.asarray(back(norm))
    seconds = time.perf_counter() - start
    marg = _marginals(lambdas, phi, cells).reshape(chains, draws, -1)
    np.savez(job["output"], draws=marg, seconds=seconds, queries=index)
    return seconds


def main() -> None:
    head = json.loads(sys.stdin.readline())
    setup = _setup(head)
    print(json.dumps({"ready": True, "queries": setup[1].tolist()}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        try:
            seconds = _fit(head, setup, job)
        except mei.ConvergenceException as err:  # its Laplace step gave up: a failed fit
            print(json.dumps({"error": str(err)}), flush=True)
            continue
        print(json.dumps({"seconds": seconds, "output": job["output"]}), flush=True)


if __name__ == "__main__":
    main()
