"""Benchmark: Zhang et al. (2020) Alg. 2 beside the per-node logistic regressions a user
would try instead, on one Ising model (p = 50, n = 1e5, random 3-regular graph).

* time: private Alg. 2 (private Frank-Wolfe, all nodes vmapped) / scikit-learn's non-private
  per-node L1 logistic regression (liblinear) — the target is a ratio <= 1;
* error ``max |A - A_hat|``: Alg. 2 at ``rho`` with ``(eps, 1/n)``-DP (Lemma 2.14), diffprivlib's
  ``LogisticRegression`` (objective perturbation, L2 only) per node at ``eps / p`` each (pure
  ``eps``-DP in all by composition), scikit-learn's non-private L1 fit.

Needs the ``bench`` extra (scikit-learn). diffprivlib 0.6.6 needs scikit-learn < 1.6, which
pgmpy >= 1.1 cannot import, so it is not in the extra: its column is printed where it is
installed (``pip install diffprivlib "scikit-learn<1.6"`` in an environment of its own) and
skipped otherwise. Run: ``python benchmarks/bench_zhang.py [--p 50] [--n 100000] [--eps 1 10]``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import _repo  # noqa: F401  (the repository root on sys.path: reproductions)
import numpy as np

from pgm_dp.learners import learn_ising, zcdp_for_epsilon
from reproductions.zhang2020.experiments import random_ising, sample_ising


def _per_node(z, make):
    """``A_hat`` from one logistic regression per node (``A_ij = w_j / 2``)."""
    n, p = z.shape
    A = np.zeros((p, p))
    for i in range(p):
        others = np.delete(np.arange(p), i)
        model = make().fit(z[:, others], z[:, i])
        A[i, others] = model.coef_.ravel() / 2
    return A


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--p", type=int, default=50)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--eps", type=float, nargs="+", default=[1.0, 10.0])
    parser.add_argument("--lam", type=float, default=1.5)
    args = parser.parse_args()
    from sklearn.linear_model import LogisticRegression

    try:
        from diffprivlib.models import LogisticRegression as DPLogistic
    except ImportError as err:  # not in the bench extra (module docstring)
        print(f"diffprivlib skipped ({err})")
        DPLogistic = None

    A, theta = random_ising(args.p, degree=3, rng=0)
    z = sample_ising(A, theta, args.n, rng=1)
    print(f"p={args.p} n={args.n} width={np.max(np.abs(A).sum(1) + np.abs(theta)):.2f}")
    t0 = time.perf_counter()
    A_sk = _per_node(z, lambda: LogisticRegression(penalty="l1", C=0.05, solver="liblinear"))
    t_sk = time.perf_counter() - t0
    print(f"sklearn L1 (non-private)   {t_sk:7.1f} s  max err {np.max(np.abs(A_sk - A)):.3f}")
    for eps in args.eps:
        rho = zcdp_for_epsilon(eps, args.n).rho
        learn_ising(z[:200], args.lam, rho, steps=2, rng=0)  # compile
        t0 = time.perf_counter()
        est = learn_ising(z, args.lam, rho, rng=2)
        t_pfw = time.perf_counter() - t0
        err = np.max(np.abs(est.A - A))
        line = (
            f"eps={eps:g} (rho={rho:.4f}, T={est.steps}): PFW {t_pfw:6.1f} s "
            f"(ratio to sklearn {t_pfw / t_sk:.2f})  max err {err:.3f}"
        )
        if DPLogistic is None:
            print(line)
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            A_dp = _per_node(
                z,
                lambda e=eps: DPLogistic(
                    epsilon=e / args.p, data_norm=np.sqrt(args.p - 1), random_state=3
                ),  # fmt: skip
            )
            t_dp = time.perf_counter() - t0
        print(f"{line} | diffprivlib {t_dp:5.1f} s max err {np.max(np.abs(A_dp - A)):.3f}")


if __name__ == "__main__":
    main()
