"""The MLE from clique marginals, solved with a NumPy junction tree (nothing to compile).

The objective is that of :func:`pgm_dp.learners.mle.fit_marginals`, the per-record
regularised negative log-likelihood

    ``L(θ) = log Z(θ) - sum_C <μ̄_C, θ_C> + λ ||θ||²``,  gradient ``μ(θ) - μ̄ + 2λθ``,

minimised by L-BFGS until the largest gradient entry is below ``tol``. That solver compiles
a JAX program per junction tree; AIM changes the tree every round, and the compilation
(seconds) then outweighs the solve. Here ``log Z`` and the marginals ``μ(θ)`` come from the
NumPy calibration of :mod:`.marginals`, fast for the moderate trees AIM builds.

>>> from pgm_dp import Domain
>>> import numpy as np
>>> dom = Domain(["A", "B"], [2, 2])
>>> tables, info = fit_tables(dom, [("A", "B")], [np.array([[0.4, 0.1], [0.2, 0.3]])])
>>> info["converged"], np.round(np.exp(tables[0]) / np.exp(tables[0]).sum(), 6).tolist()
(True, [[0.4, 0.1], [0.2, 0.3]])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.optimize

from ...domain import Clique, Domain
from ...inference.junction_tree import DEFAULT_MAX_CELLS, build_junction_tree
from .marginals import calibrate

__all__ = ["fit_tables"]


def fit_tables(
    domain: Domain,
    cliques: Sequence[Clique],
    targets: Sequence[np.ndarray],
    *,
    l2: float = 0.0,
    tol: float = 1e-8,
    max_iters: int = 2000,
    init: Sequence[np.ndarray] | None = None,
    max_cells: int = DEFAULT_MAX_CELLS,
) -> tuple[list[np.ndarray], dict]:
    """Log-potential tables of ``cliques`` whose model matches the ``targets`` marginals
    (module docstring); ``init``: starting tables (default zeros). Returns the tables and
    ``{"iterations", "max_gradient", "converged", "objective"}``."""
    cliques = tuple(tuple(c) for c in cliques)
    jt = build_junction_tree(domain, cliques, max_cells)
    shapes = [domain.sizes(c) for c in cliques]
    bounds = np.cumsum([0] + [int(np.prod(s)) for s in shapes])
    target = np.concatenate([np.asarray(t, dtype=np.float64).ravel() for t in targets])
    holders = [jt.containing(c) for c in cliques]
    reads = []
    for c, h in zip(cliques, holders, strict=True):
        clique = jt.cliques[h]
        axes = tuple(a for a, v in enumerate(clique) if v not in c)
        kept = tuple(v for v in clique if v in c)
        reads.append((h, axes, [kept.index(v) for v in c]))

    def split(x):
        return [x[bounds[i] : bounds[i + 1]].reshape(s) for i, s in enumerate(shapes)]

    def value_and_grad(x):
        beliefs, log_z = calibrate(jt, split(x))
        mu = np.concatenate(
            [
                np.transpose(beliefs[h].sum(axis=axes) if axes else beliefs[h], perm).ravel()
                for h, axes, perm in reads
            ]
        )
        value = log_z - target @ x + l2 * (x @ x)
        return value, mu - target + 2.0 * l2 * x

    x0 = np.zeros(bounds[-1]) if init is None else np.concatenate([np.ravel(t) for t in init])
    res = scipy.optimize.minimize(
        value_and_grad,
        x0,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": int(max_iters), "gtol": float(tol), "ftol": 0.0, "maxcor": 20},
    )
    max_grad = float(np.max(np.abs(value_and_grad(res.x)[1])))
    info = {
        "iterations": int(res.nit),
        "max_gradient": max_grad,
        "converged": max_grad <= tol,
        "objective": float(res.fun),
    }
    return split(res.x), info
