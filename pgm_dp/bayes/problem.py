"""The posterior as a problem: the named arrays a compiled program of a model structure takes.

Contract: a :class:`PosteriorProblem` is one release's data under the model of
:mod:`~pgm_dp.bayes.model`, every array by name, with the covariance of the counts as one of
three small types (:class:`ExactCovariance`, :class:`FrozenCovariance`,
:class:`LatentCounts`). All are NamedTuples, so JAX flattens them as pytrees: the arrays are
the leaves (arguments of the compiled programs, never constants folded into them) and the
covariance's type is part of the tree's structure (the program it selects). The model
structure itself (junction tree, cliques, table shapes) is static and lives in the compiled
functions (:mod:`~pgm_dp.bayes.compiled`). :class:`ModelOptions` are the model's options.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp

__all__ = [
    "Covariance",
    "ExactCovariance",
    "FrozenCovariance",
    "LatentCounts",
    "ModelOptions",
    "PosteriorProblem",
    "stack",
]


class ExactCovariance(NamedTuple):
    """``Sigma(theta)`` evaluated at every step, by enumerating the joint (no arrays:
    :func:`~pgm_dp.bayes.model.enumerated_covariance`)."""

    @property
    def kind(self) -> str:
        """The name ``posterior``'s ``covariance`` argument and attribute give it."""
        return "exact"


class FrozenCovariance(NamedTuple):
    """``Cov y = C = N Sigma + diag(v)`` frozen at a reference ``theta`` (the plug-in
    covariance), Gaussian noise integrated out.

    Args:
        chol: the lower Cholesky factor ``L`` of ``C``.
        precision: ``C^-1``.
    """

    chol: jax.Array
    precision: jax.Array

    @property
    def kind(self) -> str:
        """The name ``posterior``'s ``covariance`` argument and attribute give it."""
        return "plugin"

    def lowered(self, dtype) -> FrozenCovariance:
        """The precision in ``dtype`` (NUTS's products with it; ``L`` is read on its diagonal
        only and stays)."""
        return self._replace(precision=jnp.asarray(self.precision, dtype=dtype))


class LatentCounts(NamedTuple):
    """The plug-in covariance with the counts latent: ``n = N mu + A w``, ``w ~ N(0, I_r)``,
    the release's own noise around ``n`` (Laplace noise kept exact).

    Args:
        factor: ``A`` (``d x r``), ``A A^T = N Sigma``.
    """

    factor: jax.Array

    @property
    def kind(self) -> str:
        """The name ``posterior``'s ``covariance`` argument and attribute give it."""
        return "plugin"

    def lowered(self, dtype) -> LatentCounts:
        """The factor in ``dtype`` (NUTS's products with it)."""
        return LatentCounts(jnp.asarray(self.factor, dtype=dtype))


Covariance = ExactCovariance | FrozenCovariance | LatentCounts


class PosteriorProblem(NamedTuple):
    """One release's data as the compiled programs take it (a pytree; module docstring).

    Args:
        y: the release, flat ``(d,)`` (the cells of the cliques in the model's order).
        total: the release's ``N``.
        variance: the noise variance per cell (zeros for the naive model, which takes the
            release as the counts).
        laplace: per cell, whether the noise is of a Laplace kind (data, so that one
            program serves every release kind of a structure).
        offset: per cell, the fixed log-potential added to ``theta`` (structural zeros).
        covariance: the covariance of the counts (its type selects the program).
    """

    y: jax.Array
    total: jax.Array
    variance: jax.Array
    laplace: jax.Array
    offset: jax.Array
    covariance: Covariance

    def lowered(self, dtype) -> PosteriorProblem:
        """The covariance's large matrices in ``dtype`` (``None``: unchanged)."""
        if isinstance(self.covariance, ExactCovariance):
            return self
        return self._replace(covariance=self.covariance.lowered(dtype))


@dataclass(frozen=True)
class ModelOptions:
    """The options of :func:`~pgm_dp.bayes.model.release_model` that are not data.

    Args:
        noise_aware: model the privacy noise (``False``: the release is taken as the counts).
        prior_scale: the prior standard deviation ``s`` of each log-potential.
    """

    noise_aware: bool
    prior_scale: float


def stack(problems) -> PosteriorProblem:
    """The :class:`PosteriorProblem` s of releases of one structure (one covariance type)
    stacked along a new leading axis, the batch a ``lax.map`` over releases takes."""
    return jax.tree.map(lambda *a: jnp.stack([jnp.asarray(x) for x in a]), *problems)
