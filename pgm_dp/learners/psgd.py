"""PSGD: differentially private SGD on the per-record negative log-likelihood.

The baseline of Bernstein et al. (2017, Sec. 4), following Abadi et al. (2016, Alg. 1):
at each of ``T`` steps every record joins the lot independently with probability ``q``
(Poisson sampling); each per-example gradient of
``l(theta; x) = log Z(theta) - sum_C theta_C(x_C)`` (computed with ``jax.vmap`` over the
lot; ``grad log Z`` = the model marginals, from one junction-tree pass per step) is clipped
to L2 norm ``C``; Gaussian noise ``N(0, sigma^2 C^2 I)`` is added to their sum, which is
divided by the expected lot size ``q N``; then ``theta <- theta - eta_t * g``.

Privacy: the run is the event ``SelfComposed(PoissonSampled(q, Gaussian(sigma)), T)``; the
noise multiplier ``sigma`` is calibrated with Google's ``dp-accounting`` (RDP by default)
so that the run spends exactly the requested ``ApproxDP(epsilon, delta)`` or less, and that
cost is charged to the accountant before any data are read. ``epsilon`` the accountant
cannot reach with ``sigma >= 0.05`` raises (the paper omits those cells).

Hyper-parameters (our defaults — learning rate 3, clip 3, lot 1000, 5 epochs — were the best
of a small grid on a synthetic third-order chain, not on any user data; the paper
grid-searches them): ``epochs`` (``T = epochs /
q``), expected lot size, clipping norm, learning rate with ``1/sqrt(t)`` decay. The paper
tunes them "using a grid search ... to ensure it performs as well as possible"; note that
tuning on the private data is **not itself private** unless the search is accounted for:
:func:`grid_search` says so and returns every run so that the choice is visible.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

from ..inference.junction_tree import marginals_and_log_z
from ..models.mrf import MarkovRandomField
from ..privacy import Accountant, ApproxDP, calibrate_noise_multiplier, dpsgd_cost
from ..privacy.samplers import sample_gaussian
from ..rng import RngLike, as_generator
from .base import Fit, unflatten_tables

__all__ = ["PSGD", "grid_search", "per_example_gradients"]


def _score(tables, x_codes, axes):
    """``sum_C theta_C(x_C)`` of one record (``axes[C]`` = its columns)."""
    return sum(t[tuple(x_codes[a] for a in ax)] for t, ax in zip(tables, axes, strict=True))


def per_example_gradients(tables, marginals, codes, axes):
    """Per-example gradients ``mu - e(x_i)`` of the NLL, flattened: ``(batch, dim)``.

    ``jax.grad`` of the record's score gives the indicator ``e(x_i)`` and ``jax.vmap``
    maps it over the lot; ``mu`` (the gradient of ``log Z``) is shared by all records.
    """
    grad_score = jax.vmap(jax.grad(_score), in_axes=(None, 0, None))(tables, codes, axes)
    mu = jnp.concatenate([m.ravel() for m in marginals])
    e = jnp.concatenate([g.reshape(codes.shape[0], -1) for g in grad_score], axis=1)
    return mu[None, :] - e


@functools.lru_cache(maxsize=32)
def _clipped_sum_fn(jt, axes):
    """Jit-compiled: sum over the (padded, masked) lot of per-example gradients clipped to
    norm ``clip``."""

    def clipped_sum(tables, codes, mask, clip):
        margs, _ = marginals_and_log_z(jt, jt.factor_cliques, tables)
        grads = per_example_gradients(tables, margs, codes, axes)
        norms = jnp.linalg.norm(grads, axis=1)
        scale = mask * jnp.minimum(1.0, clip / jnp.maximum(norms, 1e-300))
        return scale @ grads

    return jax.jit(clipped_sum)


_BUCKET = 256  # lots are padded to a multiple of this, so a few shapes are compiled


@dataclass(frozen=True)
class PSGD:
    """DP-SGD learner; ``fit(data, mrf, rng=..., accountant=...)`` spends ``budget``.

    ``budget`` must be an :class:`~pgm_dp.privacy.ApproxDP` (DP-SGD is not pure DP); the
    paper uses ``delta = 1/N``.
    """

    budget: ApproxDP
    epochs: float = 5.0
    batch_size: int = 1000
    clip: float = 3.0
    learning_rate: float = 3.0
    accountant_kind: str = "rdp"
    progress: bool = False

    def fit(
        self,
        data: Any,
        mrf: MarkovRandomField,
        *,
        rng: RngLike = None,
        accountant: Accountant | None = None,
    ) -> Fit:
        if not isinstance(self.budget, ApproxDP):
            raise TypeError(f"PSGD needs an ApproxDP budget, got {self.budget!r}")
        if self.epochs <= 0 or self.batch_size < 1 or self.clip <= 0 or self.learning_rate <= 0:
            raise ValueError("epochs, batch_size, clip and learning_rate must be positive")
        codes = mrf.domain.encode(data)  # validated before anything is spent
        n = codes.shape[0]
        q = min(1.0, self.batch_size / n)
        steps = max(1, math.ceil(self.epochs / q))
        sigma = calibrate_noise_multiplier(self.budget, q, steps, self.accountant_kind)
        cost = dpsgd_cost(sigma, q, steps, self.budget.delta, self.accountant_kind)
        if accountant is not None:
            accountant.charge(
                cost, what="PSGD (DP-SGD)", mechanism="subsampled_gaussian", scale=sigma * self.clip
            )
        gen = as_generator(rng)
        jt = mrf.junction_tree()
        axes = tuple(tuple(mrf.domain.index(v) for v in c) for c in mrf.cliques)
        shapes = [mrf.domain.sizes(c) for c in mrf.cliques]
        theta = np.zeros(sum(int(np.prod(s)) for s in shapes))
        history = []
        steps_iter = tqdm(range(steps), desc="PSGD", disable=not self.progress)
        clipped_sum = _clipped_sum_fn(jt, axes)
        for t in steps_iter:
            lot = codes[gen.random(n) < q]
            size = max(_BUCKET, -(-lot.shape[0] // _BUCKET) * _BUCKET)
            padded = np.zeros((size, codes.shape[1]), dtype=np.int64)
            padded[: lot.shape[0]] = lot
            mask = (np.arange(size) < lot.shape[0]).astype(np.float64)
            total = np.asarray(
                clipped_sum(unflatten_tables(theta, shapes), padded, mask, self.clip)
            )
            noisy = (total + sample_gaussian(sigma * self.clip, total.shape, gen)) / (q * n)
            step = self.learning_rate / math.sqrt(t + 1)
            theta = theta - step * noisy
            if t % max(1, steps // 20) == 0 or t == steps - 1:
                history.append({"step": t, "lot_size": int(lot.shape[0])})
        return Fit(
            model=mrf.replace(unflatten_tables(theta, shapes)),
            history=history,
            info={
                "noise_multiplier": sigma,
                "sampling_rate": q,
                "steps": steps,
                "spent": cost,
                "budget": self.budget,
            },
        )


def grid_search(
    data: Any,
    mrf: MarkovRandomField,
    budget: ApproxDP,
    score,
    *,
    learning_rates: Sequence[float] = (0.3, 1.0, 3.0),
    clips: Sequence[float] = (0.5, 1.0, 2.0),
    batch_sizes: Sequence[int] = (500, 2000),
    rng: RngLike = None,
    **options,
) -> tuple[Fit, list[dict]]:
    """The paper's grid search over PSGD hyper-parameters; returns the best fit by ``score``
    (higher is better) and a row per configuration.

    **Not private as a whole**: every configuration spends ``budget`` on the same data and
    the selection looks at the results; only the run finally reported is accounted for.
    Use it, as the paper does, to show PSGD at its best, not to release a model.
    """
    gen = as_generator(rng)
    best, rows = None, []
    for lr in learning_rates:
        for clip in clips:
            for b in batch_sizes:
                learner = replace(
                    PSGD(budget, **options), learning_rate=lr, clip=clip, batch_size=b
                )
                fit = learner.fit(data, mrf, rng=gen)
                value = float(score(fit.model))
                rows.append({"learning_rate": lr, "clip": clip, "batch_size": b, "score": value})
                if best is None or value > best[0]:
                    best = (value, fit)
    return best[1], rows
