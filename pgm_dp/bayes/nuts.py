"""NUTS on the whitened identifiable log-potentials, compiled once per model structure."""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.infer.hmc import hmc

from .._progress import step
from .model import matvec
from .problem import PosteriorProblem

__all__ = [
    "DENSE_LIMIT",
    "Draws",
    "GaugeSplit",
    "NutsTrace",
    "RunSettings",
    "SampleStats",
    "SigmaEigen",
    "FLOAT32_ABOVE",
    "MAX_RESCALE",
    "gauge_split",
    "nuts_draws",
    "rescaled_covariance",
    "sigma_eigen",
]

#: Largest dimension for which NUTS adapts a dense mass matrix (a diagonal one above: a dense
#: estimate from a few hundred warm-up draws is too noisy there; ``docs/bayes.md``).
DENSE_LIMIT = 32
#: Above this many sampled dimensions the dense matrices in NUTS's potential (the whitening
#: factor, the frozen precision, the latent counts' factor) are ``float32``: the products
#: with them bound its cost, and ``float32`` halves their memory read
#: (``docs/design/bayes.md``); vectors, sums and the optimiser stay ``float64`` (``docs/bayes.md``).
FLOAT32_ABOVE = 256
#: Largest factor by which a pilot widens a log-potential's Laplace standard deviation.
MAX_RESCALE = 30.0
#: How many progress reports (:func:`pgm_dp._progress.step`) one NUTS run makes at most.
REPORTS = 100


def _report(done, warmup: int, total: int) -> None:
    """A host callback from the compiled chains: ``done`` iterations of every chain."""
    done = int(done)
    phase = "warm-up" if done <= warmup else "draws"
    step("NUTS iterations per chain", done, total, f"{phase}, all chains at once")


class SigmaEigen(NamedTuple):
    """The eigen-decomposition of ``Sigma = d mu / d theta``.

    Args:
        values: the eigenvalues ``w`` (ascending).
        vectors: the eigenvectors ``U`` (columns).
        gauge: the mask of the null space, the gauge (``w <= 1e-10 max w``).
    """

    values: np.ndarray
    vectors: np.ndarray
    gauge: np.ndarray


class GaugeSplit(NamedTuple):
    """Orthonormal bases of the unconstrained coordinates (:func:`gauge_split`).

    Args:
        basis: ``B``, the identifiable directions (and any latent variables).
        gauge: ``G``, the gauge.
    """

    basis: np.ndarray
    gauge: np.ndarray


class RunSettings(NamedTuple):
    """One NUTS run's settings (:func:`nuts_draws`).

    Args:
        num_warmup: warm-up steps per chain.
        num_samples: draws per chain.
        num_chains: chains, vectorised.
        key: the JAX key of the run.
        prior_scale: the prior standard deviation (the gauge's posterior).
        pilot: draws of a pilot run per chain (0: none).
    """

    num_warmup: int
    num_samples: int
    num_chains: int
    key: jax.Array
    prior_scale: float
    pilot: int = 0


class NutsTrace(NamedTuple):
    """What a compiled NUTS run returns per chain and draw (warm-up dropped): the whitened
    point ``z``, whether the step diverged, its leapfrog steps, the Hamiltonian's energy
    and the adapted step size."""

    z: jax.Array
    diverging: jax.Array
    num_steps: jax.Array
    energy: jax.Array
    step_size: jax.Array


class SampleStats(NamedTuple):
    """NUTS's sample statistics per chain and draw, named as ArviZ's ``sample_stats``."""

    step_size: np.ndarray
    diverging: np.ndarray
    n_steps: np.ndarray
    energy: np.ndarray
    lp: np.ndarray


class Draws(NamedTuple):
    """Flat unconstrained draws ``(chains, draws, size)`` and NUTS's sample statistics
    (``None`` for draws that are not NUTS's)."""

    unconstrained: np.ndarray
    stats: SampleStats | None


def sigma_eigen(sigma: np.ndarray) -> SigmaEigen:
    """The :class:`SigmaEigen` of ``Sigma = d mu / d theta``; one decomposition serves
    :func:`gauge_split` and the latent counts of the plug-in path."""
    w, u = np.linalg.eigh(0.5 * (sigma + sigma.T))
    return SigmaEigen(w, u, w <= 1e-10 * w.max())


def gauge_split(eigen: SigmaEigen, size: int) -> GaugeSplit:
    """Orthonormal bases ``(B, G)`` of the unconstrained coordinates (``size``: the
    log-potentials, then any latent variables) from ``eigen = sigma_eigen(Sigma)``: ``G``
    spans the gauge, the log-potential directions that change no marginal (the null space of
    ``Sigma``), ``B`` the rest. The likelihood does not depend on the gauge coordinates, so
    under the isotropic prior their posterior is the prior, exactly and independently of
    the rest."""
    u, null = eigen.vectors, eigen.gauge
    d, extra = u.shape[0], size - u.shape[0]
    basis = np.zeros((size, size - int(null.sum())))
    basis[:d, : int((~null).sum())] = u[:, ~null]
    basis[d:, int((~null).sum()) :] = np.eye(extra)
    gauge = np.zeros((size, int(null.sum())))
    gauge[:d] = u[:, null]
    return GaugeSplit(basis, gauge)


class Whitening(NamedTuple):
    """The arguments of NUTS's potential: the release's problem, and the map ``theta = x +
    z L^T`` (``L L^T`` the fit's covariance) from NUTS's whitened coordinates ``z``."""

    problem: PosteriorProblem
    x: jax.Array
    chol_t: jax.Array


def _whitened_potential(args: Whitening, potential):
    """The potential of ``z``, the log-potentials whitened by the Laplace fit."""
    return lambda z: potential(args.x + matvec(z, args.chol_t), args.problem)


@functools.lru_cache(maxsize=32)
def _sampler(potential, size: int, num_warmup: int, num_samples: int):
    """``run(keys, z0, args) -> NutsTrace``, each field ``(chains, draws, ...)``: NUTS
    (NumPyro's kernel, Hoffman & Gelman 2014, with its step-size and mass-matrix
    adaptation: dense up to :data:`DENSE_LIMIT` dimensions, diagonal above) on the whitened
    coordinates from ``z0``, chains vectorised. Compiled once per model structure (its
    ``potential``) and run length; the release's arrays are arguments, not constants folded
    into the program (which made XLA's compile take tens of minutes at ``d = 2400``). Every
    ``total / REPORTS`` iterations a host callback reports the count (:func:`_report`)."""
    init_kernel, sample_kernel = hmc(
        potential_fn_gen=functools.partial(_whitened_potential, potential=potential),
        algo="NUTS",
    )
    small = size <= DENSE_LIMIT
    total = num_warmup + num_samples
    every = max(1, total // REPORTS)  # progress: a host callback every `every` iterations
    report = functools.partial(_report, warmup=num_warmup, total=total)

    def chain(rng_key, z0, args):
        state = init_kernel(
            z0,
            num_warmup,
            adapt_mass_matrix=True,
            dense_mass=small,
            model_args=(args,),
            rng_key=rng_key,
        )

        def one(state, i):
            state = sample_kernel(state, model_args=(args,))
            jax.lax.cond(
                (i + 1) % every == 0, lambda: jax.debug.callback(report, i + 1), lambda: None
            )
            trace = NutsTrace(
                state.z,
                state.diverging,
                state.num_steps,
                state.energy,
                state.adapt_state.step_size,
            )
            return state, trace

        # one scan over warm-up and draws: the kernel is compiled once (two scans compiled
        # it twice); the warm-up's outputs are dropped
        _, out = jax.lax.scan(one, state, jnp.arange(total))
        return jax.tree.map(lambda a: a[num_warmup:], out)

    return jax.jit(jax.vmap(chain, in_axes=(0, 0, None)))


def _factor(cov_b: np.ndarray) -> np.ndarray:
    """The lower Cholesky factor of ``cov_b`` (a relative jitter of ``1e-12``)."""
    jitter = 1e-12 * np.trace(cov_b) / len(cov_b)
    return np.linalg.cholesky(cov_b + jitter * np.eye(len(cov_b)))


def rescaled_covariance(cov_b: np.ndarray, basis: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """The Laplace covariance ``cov_b`` (of ``B^T theta``) with each log-potential's
    marginal variance taken from a pilot's ``draws`` of ``theta`` (``(n, size)``, centred
    anywhere) where wider, and its correlations kept: ``M cov_b M^T``, ``M = B^T D B``, ``D``
    the ratios of the pilot's standard deviations to the Laplace ones (clipped to ``[1,``
    :data:`MAX_RESCALE` ``]``). Cells with small counts have a posterior in theta with a
    long tail towards the prior, wider than ``H^-1`` says (``docs/bayes.md``)."""
    laplace_var = np.einsum("ij,jk,ik->i", basis, cov_b, basis)
    ratio = np.sqrt(draws.var(0) / np.maximum(laplace_var, 1e-300))
    scale = np.clip(np.nan_to_num(ratio, nan=1.0), 1.0, MAX_RESCALE)
    m = basis.T @ (scale[:, None] * basis)
    return m @ cov_b @ m.T


def _run(functions, problem, x_b, whiten, z0, num_warmup, num_samples, key) -> NutsTrace:
    """One vectorised NUTS run on ``theta = x_b + z whiten^T`` from ``z0`` (per chain)."""
    run = _sampler(functions.potential, whiten.shape[1], int(num_warmup), int(num_samples))
    dtype = "float32" if whiten.shape[1] > FLOAT32_ABOVE else None
    args = Whitening(problem.lowered(dtype), jnp.asarray(x_b), jnp.asarray(whiten.T, dtype=dtype))
    keys = jax.random.split(key, len(z0))
    return run(keys, jnp.asarray(z0), args)


def nuts_draws(functions, problem, x, cov, split: GaugeSplit, run: RunSettings) -> Draws:
    """Flat unconstrained draws ``(chains, draws, size)`` and NUTS's sample stats. NUTS runs
    on the identifiable coordinates only (``split``, :func:`gauge_split`), whitened by
    ``B^T H^-1 B``; the gauge coordinates are drawn from their posterior, the prior ``N(0,
    s^2)``, exactly (in the full coordinates they were NUTS's slowest directions). A pilot
    (``run.pilot`` > 0: ``num_warmup`` warm-up steps, ``pilot`` draws) runs first, whose
    draws rescale the whitening (:func:`rescaled_covariance`); the main run starts from its
    last state.

    Args:
        functions: the structure's :class:`~pgm_dp.bayes.compiled.CompiledFunctions`.
        problem: the release's :class:`~pgm_dp.bayes.problem.PosteriorProblem`.
        x: the Laplace fit's mode (unconstrained, flat).
        cov: ``H^-1`` there.
        split: the bases of the identifiable coordinates and of the gauge.
        run: the run's settings.
    """
    basis, gauge = split.basis, split.gauge
    key_nuts, key_gauge, key_pilot = jax.random.split(run.key, 3)
    cov_b = basis.T @ cov @ basis
    whiten = basis @ _factor(cov_b)  # theta = x_b + z whiten^T
    x_b = np.asarray(x) - gauge @ (gauge.T @ np.asarray(x))
    z0 = np.zeros((int(run.num_chains), whiten.shape[1]))
    if run.pilot:
        trace = _run(functions, problem, x_b, whiten, z0, run.num_warmup, run.pilot, key_pilot)
        z = np.asarray(trace.z)
        flat = z.reshape(-1, z.shape[-1]) @ whiten.T  # the pilot's theta - x_b
        whiten_new = basis @ _factor(rescaled_covariance(cov_b, basis, flat))
        last = z[:, -1] @ whiten.T  # each chain's last pilot draw
        z0 = np.linalg.lstsq(whiten_new, last.T, rcond=None)[0].T
        whiten = whiten_new
    trace = _run(functions, problem, x_b, whiten, z0, run.num_warmup, run.num_samples, key_nuts)
    energy = np.asarray(trace.energy)
    stats = SampleStats(
        step_size=np.asarray(trace.step_size),
        diverging=np.asarray(trace.diverging),
        n_steps=np.asarray(trace.num_steps),
        energy=energy,
        lp=-energy,
    )
    shape = (int(run.num_chains), int(run.num_samples), gauge.shape[1])
    free = run.prior_scale * np.asarray(jax.random.normal(key_gauge, shape))
    return Draws(x_b + np.asarray(trace.z) @ whiten.T + free @ gauge.T, stats)
