"""diffprivlib's private logistic regression, one per node of an Ising sample (the peer of
``bench_zhang.py``, run in diffprivlib's own environment: it needs scikit-learn < 1.6).

``python benchmarks/_peers_diffprivlib.py --spins Z.npy --epsilon E --seed S --out A.npy``:
node ``i`` regresses ``z_i`` on ``z_-i`` with ``LogisticRegression(epsilon=E,
data_norm=sqrt(p - 1))`` (objective perturbation, Chaudhuri et al. 2011; pure ``E``-DP per
node); ``A_ij = w_j / 2``. Prints the process's CPU seconds for the fits. No pgm_dp import.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spins", required=True)
    ap.add_argument("--epsilon", type=float, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    from diffprivlib.models import LogisticRegression

    z = np.load(a.spins)
    n, p = z.shape
    A = np.zeros((p, p))
    t0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(p):
            others = np.delete(np.arange(p), i)
            model = LogisticRegression(
                epsilon=a.epsilon, data_norm=np.sqrt(p - 1), random_state=a.seed + 1000 * i
            )
            A[i, others] = model.fit(z[:, others], z[:, i]).coef_.ravel() / 2
    print(time.process_time() - t0)
    np.save(a.out, A)


if __name__ == "__main__":
    main()
