"""What every learner shares: the :class:`Fit` result and release/model compatibility checks.

Learners are small configuration objects with a ``fit(...)`` method returning a
:class:`Fit`; release-based learners take ``fit(release, mrf)``, per-record learners
``fit(data, mrf)``. The ``mrf`` argument supplies the structure (domain and cliques) and,
where useful, the starting point.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ConvergenceWarning, DomainError
from ..models.mrf import MarkovRandomField

__all__ = ["Fit", "check_release_matches", "concat_tables", "flatten_tables", "unflatten_tables"]


@dataclass(frozen=True)
class Fit:
    """A fitted model and how it was obtained.

    ``model`` is the learned :class:`MarkovRandomField`; ``history`` a list of per-iteration
    records (dicts: objective, KL, ... where meaningful); ``info`` anything else the learner
    reports (iterations, convergence, the privacy budget spent, timings).
    """

    model: MarkovRandomField
    history: list[dict[str, Any]] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    def warn_unless_converged(self, learner: str, cap: int | None = None) -> Fit:
        """This fit, after a :class:`~pgm_dp.errors.ConvergenceWarning` if
        ``info["converged"]`` is false (a silent non-converged fit looks like a result); with
        ``cap``, only if the fit also used all ``cap`` iterations. The MLE learners pass their
        cap: before it, L-BFGS stops only when its line search can no longer decrease the
        objective in float64, i.e. at the precision limit (seen: largest marginal mismatch
        1.15e-8 to 4.2e-7 against ``tol = 1e-8``; ``info["converged"]`` stays false)."""
        capped = cap is None or self.info.get("iterations", cap) >= cap
        if not self.info.get("converged", True) and capped:
            done = ", ".join(
                f"{k}={self.info[k]:.3g}"
                for k in ("iterations", "max_gradient", "nlbp_iterations")
                if k in self.info
            )
            warnings.warn(
                f"{learner} did not converge ({done}); the model returned is its last iterate",
                ConvergenceWarning,
                stacklevel=3,
            )
        return self


def check_release_matches(release, mrf: MarkovRandomField) -> None:
    """Refuse a release whose domain or cliques differ from the model's."""
    if release.domain != mrf.domain:
        raise DomainError(f"release domain {release.domain} differs from the model's {mrf.domain}")
    if set(release.cliques) != set(mrf.cliques):
        raise DomainError(
            "release cliques do not match the model's cliques: "
            f"only in release {sorted(set(release.cliques) - set(mrf.cliques), key=str)}, "
            f"only in model {sorted(set(mrf.cliques) - set(release.cliques), key=str)}"
        )
    if not np.isfinite(release.total) or release.total <= 0:
        raise DomainError(f"release total N must be positive, got {release.total}")


def flatten_tables(tables) -> np.ndarray:
    """Concatenate clique tables into one float64 vector (the optimisers' parameter)."""
    return np.concatenate([np.asarray(t, dtype=np.float64).ravel() for t in tables])


def concat_tables(tables) -> jax.Array:
    """Concatenate tables into one flat JAX vector (traceable; the inverse of
    :func:`unflatten_tables`)."""
    return jnp.concatenate([jnp.ravel(t) for t in tables])


def unflatten_tables(flat, shapes) -> list:
    """Split a flat vector (numpy or JAX, traceable) back into tables of ``shapes``."""
    out, start = [], 0
    for shape in shapes:
        size = int(np.prod(shape))
        out.append(flat[start : start + size].reshape(shape))
        start += size
    return out
