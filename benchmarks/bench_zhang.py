"""Benchmark: private Ising learning beside the per-node logistic regressions a user would
try instead (a 16-node model: random 4-regular graph, couplings ±0.3, no fields).

For every ``n`` and ``rho`` (zCDP), the max coupling error ``max |A_hat - A|`` (every method
symmetrised, ``(A_hat + A_hat^T) / 2``; median of ``--trials`` noise draws) and the CPU
seconds (``time.process_time``, median; the private learners compiled by an untimed first
call on the same data) of:

* ``pfw``: ``learn_ising`` (Zhang et al. Alg. 2, private Frank-Wolfe, ``lam = 1.5``);
* ``lr``: ``learn_ising_logistic`` (per-node L2 logistic regression, Gaussian output
  perturbation, shrinkage corrected; the registered ``ising_logistic``);
* ``dpl``: diffprivlib's ``LogisticRegression`` per node at ``eps_i = sqrt(2 rho / p)`` (pure
  ``eps_i``-DP is ``eps_i^2 / 2``-zCDP: ``p`` nodes make ``rho``), run by ``--peer-python``
  (its own environment: diffprivlib 0.6 needs scikit-learn < 1.6) through
  ``_peers_diffprivlib.py``; skipped when no ``--peer-python`` is given;
* ``sk``: scikit-learn's non-private L1 logistic regression per node (liblinear, ``C = 0.05``).

Ratios: error of ``pfw`` / ``lr`` over ``dpl``'s (target <= 1 from ``n = 3e4``), CPU time
over ``sk``'s (target <= 1 from ``n = 1e5``). Run: ``python benchmarks/bench_zhang.py
--peer-python PATH/TO/venv/bin/python [--ns 1e4 3e4 1e5 3e5] [--rhos 0.1 1] [--trials 3]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

import _repo  # noqa: F401  (the repository root on sys.path: reproductions)
import numpy as np

from pgm_dp.learners import learn_ising, learn_ising_logistic
from reproductions.zhang2020.experiments import random_ising, sample_ising

HERE = Path(__file__).resolve().parent


def _err(A_hat, A) -> float:
    return float(np.max(np.abs((A_hat + A_hat.T) / 2 - A)))


def _sklearn(z):
    from sklearn.linear_model import LogisticRegression

    n, p = z.shape
    A = np.zeros((p, p))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn >= 1.8 deprecates ``penalty``
        for i in range(p):
            others = np.delete(np.arange(p), i)
            m = LogisticRegression(penalty="l1", C=0.05, solver="liblinear")
            A[i, others] = m.fit(z[:, others], z[:, i]).coef_.ravel() / 2
    return A


def _timed(fn):
    t0 = time.process_time()
    out = fn()
    return out, time.process_time() - t0


def _peer(python, z, eps, seed, tmp):
    spins, out = Path(tmp) / "z.npy", Path(tmp) / "a.npy"
    np.save(spins, z)
    cmd = [python, str(HERE / "_peers_diffprivlib.py"), "--spins", str(spins),
           "--epsilon", repr(eps), "--seed", str(seed), "--out", str(out)]  # fmt: skip
    res = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return np.load(out), float(res.stdout.split()[-1])


def _ours(fn, trials, A):
    fn(0)  # compile (and load the compilation cache) on the same shapes: untimed
    errs, secs = [], []
    for s in range(trials):
        est, sec = _timed(lambda s=s: fn(s + 1))
        errs.append(_err(est.A, A))
        secs.append(sec)
    return statistics.median(errs), statistics.median(secs), est


def _row(n, rho, A, z, args, sk):
    p = z.shape[1]
    e_pfw, t_pfw, est = _ours(lambda s: learn_ising(z, args.lam, rho, rng=s), args.trials, A)
    e_lr, t_lr, _ = _ours(lambda s: learn_ising_logistic(z, rho, rng=s), args.trials, A)
    row = {"n": n, "rho": rho, "T": est.steps, "pfw": e_pfw, "lr": e_lr, "sk": sk[0],
           "t_pfw": t_pfw, "t_lr": t_lr, "t_sk": sk[1]}  # fmt: skip
    if args.peer_python:
        eps = (2 * rho / p) ** 0.5
        with tempfile.TemporaryDirectory() as tmp:
            runs = [_peer(args.peer_python, z, eps, s, tmp) for s in range(args.trials)]
        row["dpl"] = statistics.median(_err(a, A) for a, _ in runs)
        row["t_dpl"] = statistics.median(t for _, t in runs)
    return row


HEAD = ("n", "rho", "T", "err pfw", "err lr", "err dpl", "err sk", "pfw/dpl", "lr/dpl",
        "cpu pfw", "cpu lr", "cpu dpl", "cpu sk", "pfw/sk", "lr/sk")  # fmt: skip


def _print(rows) -> None:
    for r in rows:
        dpl, t_dpl = r.get("dpl", float("nan")), r.get("t_dpl", float("nan"))
        cells = (f"{r['n']:.0e}", f"{r['rho']:g}", str(r["T"]), f"{r['pfw']:.3f}",
                 f"{r['lr']:.3f}", f"{dpl:.3f}", f"{r['sk']:.3f}", f"{r['pfw'] / dpl:.2f}",
                 f"{r['lr'] / dpl:.2f}", f"{r['t_pfw']:.2f}", f"{r['t_lr']:.2f}",
                 f"{t_dpl:.2f}", f"{r['t_sk']:.2f}", f"{r['t_pfw'] / r['t_sk']:.2f}",
                 f"{r['t_lr'] / r['t_sk']:.2f}")  # fmt: skip
        print("| " + " | ".join(cells) + " |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns", type=float, nargs="+", default=[1e4, 3e4, 1e5, 3e5])
    ap.add_argument("--rhos", type=float, nargs="+", default=[0.1, 1.0])
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--lam", type=float, default=1.5)
    ap.add_argument("--peer-python", default=None, help="a Python with diffprivlib")
    args = ap.parse_args()
    A, theta = random_ising(16, degree=4, rng=0, low=0.3, high=0.3)
    print("| " + " | ".join(HEAD) + " |")
    print("|" + "---|" * len(HEAD), flush=True)
    for n in map(int, args.ns):
        z = sample_ising(A, theta, n, rng=1)
        A_sk, t_sk = _timed(lambda z=z: _sklearn(z))
        for rho in args.rhos:  # a row as soon as it is measured
            _print([_row(n, rho, A, z, args, (_err(A_sk, A), t_sk))])


if __name__ == "__main__":
    main()
