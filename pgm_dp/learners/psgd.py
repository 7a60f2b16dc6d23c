"""PSGD: differentially private SGD on the per-record negative log-likelihood.

The baseline of Bernstein et al. (2017, Sec. 4), following Abadi et al. (2016, Alg. 1):
at each of ``T`` steps every record joins the lot independently with probability ``q``
(Poisson sampling); each per-example gradient of
``l(theta; x) = log Z(theta) - sum_C theta_C(x_C)`` (``mu - e(x)``: ``grad log Z`` = the
model marginals ``mu``, from one junction-tree pass per step; ``e(x)`` the record's one-hot
cells; :func:`per_example_gradients` computes them with ``jax.vmap``) is clipped
to L2 norm ``C``; Gaussian noise ``N(0, sigma^2 C^2 I)`` is added to their sum, which is
divided by the expected lot size ``q N``; then ``theta <- theta - eta_t * g``.

Floating-point safety (our construction; Abadi et al. add float Gaussian noise, which
Mironov 2012's attack applies to): the clipped sum is rounded to a lattice ``g Z`` and the
noise is the exact discrete Gaussian on that lattice (:mod:`pgm_dp.privacy.lattice`), of
standard deviation ``sigma (C + g sqrt(d))``: rounding adds at most ``g sqrt(d)`` to the
sum's L2 sensitivity ``C`` (``d`` parameters), so the noise multiplier with respect to the
rounded sum is still ``sigma``. ``sigma / g`` is between ``2^14`` and ``2^15`` (the finest
lattice on which the exact sampler stays fast), so the extra noise is about ``sigma sqrt(d) /
2^14``: on the third-order chain (``d = 2400``) 0.2% at ``sigma = 1.2`` but 26% at ``sigma =
145`` (``epsilon = 0.01``, N = 1e4): the price of floating-point safety there.
The accountant is the continuous subsampled Gaussian's (RDP); the discrete Gaussian's
Rényi divergences are at most the continuous one's (Canonne, Kamath & Steinke 2020),
which we take to carry over to Poisson subsampling.

Privacy: the run is the event ``SelfComposed(PoissonSampled(q, Gaussian(sigma)), T)``; the
noise multiplier ``sigma`` is calibrated with Google's ``dp-accounting`` (RDP by default)
so that the run spends exactly the requested ``ApproxDP(epsilon, delta)`` or less, and that
cost is charged to the accountant after every input is validated and before any lot or
noise is drawn. Every ``epsilon`` is reached by enough noise (``sigma`` grows as
``epsilon`` shrinks), so no cell is omitted as in the paper; where even ``sigma = 0.05``
(the floor) meets the target, the run spends less than asked and reports what it spent.
The number of records ``N`` sets ``q = L / N`` (Abadi et al. treat it as public): by default
it is a noisy count paid from the budget (:class:`PSGD`, ``total``); ``total="public"``
uses the true ``N`` as the papers do, outside the guarantee.

Hyper-parameters (our defaults — learning rate 3, clip 3, lot 1000, 5 epochs — were the best
of a small grid on a synthetic third-order chain, not on any user data; the paper
grid-searches them): ``epochs`` (``T = epochs /
q``), expected lot size, clipping norm, learning rate with ``1/sqrt(t)`` decay. The paper
tunes them "using a grid search ... to ensure it performs as well as possible"; note that
tuning on the private data is **not itself private** unless the search is accounted for:
:func:`grid_search` says so and returns every run so that the choice is visible.

Implementation: after the charge, all ``T`` lots are drawn first (one ``Bernoulli(q)`` per
record and step, as before), then the steps run inside one jit-compiled ``jax.lax.scan`` per
chunk of steps (chunks bound host memory; one compilation per lot width, padded to a multiple
of 256), with each step's lattice noise drawn exactly beforehand. Inside a
step the per-example gradients are never formed: their norms use the closed form
``||mu - e(x)||^2 = sum_C (||mu_C||^2 - 2 mu_C(x_C) + 1)`` (:func:`_gradient_norms`) and the
clipped sum is ``(sum_i s_i) mu - sum_i s_i e(x_i)``, one scatter-add (:func:`_clipped_sum`);
both are tested against the clipped ``jax.vmap`` gradients. The sum, hence the distribution
of the output and the privacy analysis, is unchanged.
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

from .._config import jit_program
from .._progress import tick, tqdm
from ..errors import PrivacyParameterError
from ..inference.junction_tree import marginals_and_log_z
from ..models.mrf import MarkovRandomField
from ..privacy import (
    Accountant,
    ApproxDP,
    PureDP,
    calibrate_noise_multiplier,
    discrete_laplace_mechanism,
    dpsgd_cost,
)
from ..privacy.budget import require_budget
from ..privacy.lattice import lattice_noisy, plan_gaussian
from ..rng import RngLike, as_generator
from .base import Fit, concat_tables, unflatten_tables

__all__ = ["PSGD", "grid_search", "per_example_gradients"]

Axes = tuple[tuple[int, ...], ...]  # per clique, its columns in the data


def _flat_index(x_codes: jax.Array, ax: tuple[int, ...], shape: tuple[int, ...]) -> jax.Array:
    """Row-major cell index of ``x_codes`` restricted to columns ``ax`` in a table of ``shape``."""
    idx = 0
    for a, k in zip(ax, shape, strict=True):
        idx = idx * k + x_codes[a]
    return idx


def _score(tables: Sequence[jax.Array], x_codes: jax.Array, axes: Axes) -> jax.Array:
    """``sum_C theta_C(x_C)`` of one record (``axes[C]`` = its columns).

    Written as a one-hot contraction rather than ``theta_C[x_C]``: the value is the same, and
    under ``vmap`` its ``jax.grad`` (the indicator ``e_C(x)``) is an elementwise compare rather
    than a batched scatter, which XLA runs several times slower on CPU.
    """
    total = 0.0
    for t, ax in zip(tables, axes, strict=True):
        hit = jnp.arange(t.size) == _flat_index(x_codes, ax, t.shape)
        total = total + jnp.sum(jnp.where(hit, t.ravel(), 0.0))
    return total


def _gradient_blocks(
    tables: Sequence[jax.Array], marginals: Sequence[jax.Array], codes: jax.Array, axes: Axes
) -> list[jax.Array]:
    """Per-example gradients ``mu_C - e_C(x_i)``, one ``(batch, |C|)`` block per clique.

    ``jax.grad`` of the record's score gives the indicator ``e(x_i)`` and ``jax.vmap`` maps it
    over the lot; ``mu`` (the gradient of ``log Z``) is shared by all records.
    """
    score = functools.partial(_score, axes=axes)
    e = jax.vmap(jax.grad(score), in_axes=(None, 0))(tables, codes)
    n = codes.shape[0]
    return [m.reshape(1, -1) - g.reshape(n, -1) for m, g in zip(marginals, e, strict=True)]


def per_example_gradients(
    tables: Sequence[jax.Array], marginals: Sequence[jax.Array], codes: jax.Array, axes: Axes
) -> jax.Array:
    """Per-example gradients ``mu - e(x_i)`` of the NLL, flattened: ``(batch, dim)``."""
    return jnp.concatenate(_gradient_blocks(tables, marginals, codes, axes), axis=1)


def _record_cells(marginals: Sequence[jax.Array], codes: jax.Array, axes: Axes) -> jax.Array:
    """``(cliques, batch)`` positions of each record's cell ``x_C`` in the concatenated
    marginals (the support of its one-hot ``e(x)``)."""
    cells, offset = [], 0
    for m, ax in zip(marginals, axes, strict=True):
        cells.append(offset + _flat_index(codes.T, ax, np.shape(m)))
        offset += math.prod(np.shape(m))
    return jnp.stack(cells)


def _gradient_norms(marginals: Sequence[jax.Array], codes: jax.Array, axes: Axes) -> jax.Array:
    """``||mu - e(x_i)||_2`` per record without forming the gradients (see :func:`_norms`)."""
    return _norms(concat_tables(marginals), _record_cells(marginals, codes, axes))


def _norms(mu: jax.Array, cells: jax.Array) -> jax.Array:
    """``||mu - e(x_i)||_2`` from the flat marginals ``mu`` and the records' cells.

    ``e_C(x)`` is one-hot, so ``||mu - e(x)||^2 = sum_C (||mu_C||^2 - 2 mu_C(x_C) + 1)``: a
    gather per clique instead of a pass over ``(batch, dim)``. A rounding slack (a generous
    bound on the float64 error of that sum) is added so the norm is never underestimated and
    clipped gradients never exceed ``clip``; it changes ``norm ~ 1`` by about ``1e-12``.
    """
    k, dim = cells.shape[0], mu.size
    squared = jnp.vdot(mu, mu) - 2.0 * jnp.sum(mu[cells], axis=0) + k
    slack = 16 * np.finfo(np.float64).eps * (dim + k * k)
    return jnp.sqrt(jnp.maximum(squared, 0.0) + slack)


def _clipped_sum(
    jt: Any, axes: Axes, tables: Sequence[jax.Array], codes: jax.Array, mask: jax.Array, clip: float
) -> jax.Array:
    """Sum over the (padded, masked) lot of per-example gradients clipped to norm ``clip``.

    With ``s_i`` the clipping factors, ``sum_i s_i (mu - e(x_i)) = (sum_i s_i) mu - h`` where
    ``h`` adds ``s_i`` into each clique's cell of record ``i``: one scatter-add over the lot
    instead of forming the ``(lot, dim)`` gradients (the same sum, tested against them).
    """
    margs, _ = marginals_and_log_z(jt, jt.factor_cliques, tables)
    mu = concat_tables(margs)
    cells = _record_cells(margs, codes, axes)  # shared by the norms and the scatter-add
    scale = mask * jnp.minimum(1.0, clip / jnp.maximum(_norms(mu, cells), 1e-300))
    hits = jnp.zeros(mu.size).at[cells.ravel()].add(jnp.tile(scale, cells.shape[0]))
    return jnp.sum(scale) * mu - hits


@functools.lru_cache(maxsize=32)
def _run_steps_fn(jt: Any, axes: Axes, shapes: tuple[tuple[int, ...], ...]):
    """Jit-compiled ``lax.scan`` of DP-SGD steps over a chunk of precomputed lots.

    Per step: ``theta <- theta - lr_t (round_g(sum_i clip(g_i)) + noise_t) / (q N)``, the
    clipped sum rounded to the noise lattice ``g Z`` (see :class:`PSGD`). Padded steps
    (``lr_t = 0``, empty mask, zero noise) leave ``theta`` unchanged.
    """

    def run(theta, lots, masks, noise, rates, clip, denom, g):
        def step(theta, xs):
            lot, mask, z, lr = xs
            total = _clipped_sum(jt, axes, unflatten_tables(theta, shapes), lot, mask, clip)
            return theta - lr * ((jnp.round(total / g) * g + z) / denom), None

        return jax.lax.scan(step, theta, (lots, masks, noise, rates))[0]

    return jit_program(run)


_BUCKET = 256  # lots are padded to a multiple of this, so few shapes are compiled
_CHUNK_CELLS = 1 << 22  # host arrays of one scan call: about this many numbers at most


_TOTALS = ("private", "public")


def _check_total(total: Any, fraction: float) -> None:
    """PrivacyParameterError unless ``total`` is ``"private"``, ``"public"`` or a number ``> 0``
    and ``fraction`` is in ``(0, 1)``."""
    if isinstance(total, str):
        if total not in _TOTALS:
            raise PrivacyParameterError(f"total must be a number or one of {_TOTALS}: {total!r}")
    elif isinstance(total, bool) or not isinstance(total, int | float | np.integer | np.floating):
        raise PrivacyParameterError(f"total must be a number or one of {_TOTALS}: {total!r}")
    elif not math.isfinite(total) or total <= 0:
        raise PrivacyParameterError(f"a given total must be finite and > 0, got {total!r}")
    if not (isinstance(fraction, int | float) and 0 < fraction < 1):
        raise PrivacyParameterError(f"total_fraction must be in (0, 1), got {fraction!r}")


def _number_of_records(total, fraction, budget, n, gen, accountant):
    """``(N used for q, its source, the DP-SGD target, the count's cost or None)``: a noisy
    count (exact discrete Laplace, sensitivity 1, ``fraction`` of ``epsilon``; at least 1),
    the true ``n`` (``"public"``) or a given number."""
    if total == "public":
        return float(n), "public", budget, None
    if total != "private":
        return float(total), "given", budget, None
    cost = PureDP(budget.epsilon * fraction)
    noisy = discrete_laplace_mechanism(
        [n],
        l1_sensitivity=1,
        budget=cost,
        rng=gen,
        accountant=accountant,
        what="PSGD: number of records",
    )
    target = ApproxDP(budget.epsilon * (1 - fraction), budget.delta)
    return max(float(noisy[0]), 1.0), "private", target, cost


def _history(lots: list[np.ndarray], public: bool) -> list[dict]:
    """About 20 steps; their lot sizes only when ``N`` is public (they reveal it)."""
    every = max(1, len(lots) // 20)
    return [
        {"step": t, "lot_size": int(lot.size)} if public else {"step": t}
        for t, lot in enumerate(lots)
        if t % every == 0 or t == len(lots) - 1
    ]


@dataclass(frozen=True)
class PSGD:
    """DP-SGD learner from records (:class:`~pgm_dp.learners.RecordLearner`).

    ``fit(data, mrf, *, budget, rng, accountant)`` spends ``budget``, which must be an
    :class:`~pgm_dp.privacy.ApproxDP` (DP-SGD is not pure DP; the paper uses
    ``delta = 1/N``).

    The number of records ``N`` sets the sampling rate ``q = L / N``, hence the number of
    steps and the gradient's divisor, and the lot sizes are ``Binomial(N, q)``: all reveal
    ``N``, which is not protected by DP-SGD's noise. ``total`` says where ``N`` comes from:

    * ``"private"`` (default): a noisy count, the exact discrete Laplace with sensitivity 1
      and ``total_fraction`` of ``epsilon`` (charged through the mechanism layer); DP-SGD is
      calibrated to the rest, ``ApproxDP((1 - total_fraction) epsilon, delta)``;
    * a number: a known public population size;
    * ``"public"``: the true ``N`` (Bernstein et al. and Abadi et al.'s convention, outside
      the guarantee; the reproductions pass it). Only then does ``fit.history`` give the
      lot sizes.

    ``fit.info``: ``noise_multiplier``, ``noise_std``, ``sampling_rate``, ``steps``, ``total``
    (the ``N`` used) and ``total_source``, ``spent`` (everything, the count included) and
    ``budget``. (With ``delta = 1/N`` the budget itself names ``N``: pick ``delta`` from a
    public bound.)

    >>> from pgm_dp.models import third_order_chain
    >>> truth = third_order_chain(4, 2, rng=0)
    >>> fit = PSGD(epochs=1).fit(truth.sample(2000, rng=1), truth,
    ...                          budget=ApproxDP(1.0, 1e-4), rng=2)
    >>> fit.info["spent"].epsilon <= 1.0, fit.info["total_source"]
    (True, 'private')
    """

    epochs: float = 5.0
    batch_size: int = 1000
    clip: float = 3.0
    learning_rate: float = 3.0
    accountant_kind: str = "rdp"
    progress: bool = False
    total: str | float = "private"
    total_fraction: float = 0.05

    def _check(self, budget: Any) -> None:
        msg = f"PSGD needs an ApproxDP (epsilon, delta) budget, got {budget!r}"
        require_budget(budget, ApproxDP, msg)
        positive = (self.epochs, self.batch_size, self.clip, self.learning_rate)
        if not all(math.isfinite(v) and v > 0 for v in positive) or self.batch_size < 1:
            raise ValueError("epochs, batch_size, clip and learning_rate must be finite, > 0")
        _check_total(self.total, self.total_fraction)

    def fit(
        self,
        data: Any,
        mrf: MarkovRandomField,
        *,
        budget: ApproxDP,
        rng: RngLike = None,
        accountant: Accountant | None = None,
    ) -> Fit:
        self._check(budget)
        # Everything that can fail is done before anything is spent.
        codes = mrf.domain.encode(data)
        gen = as_generator(rng)
        jt = mrf.junction_tree()
        if accountant is not None:
            accountant.check(budget, what="PSGD")  # the count and DP-SGD together
        dim = sum(math.prod(mrf.domain.sizes(c)) for c in mrf.cliques)
        if self.total == "private":  # calibrated first, at q = 1 (no amplification: the most
            target = ApproxDP(budget.epsilon * (1 - self.total_fraction), budget.delta)
            self._calibrate(float(self.batch_size), target, dim)  # noise), before the count
        n = codes.shape[0]
        n_used, source, target, count_cost = _number_of_records(
            self.total, self.total_fraction, budget, n, gen, accountant
        )
        q, steps, sigma, cost, plan = self._calibrate(n_used, target, dim)
        if accountant is not None:
            accountant.charge(
                cost, what="PSGD (DP-SGD)", mechanism="subsampled_gaussian", scale=plan.scale
            )
        lots = [np.flatnonzero(gen.random(n) < q) for _ in range(steps)]  # Poisson sampling
        theta = self._steps(jt, mrf, codes, lots, plan, q * n_used, gen)
        spent = cost
        if count_cost is not None:
            spent = ApproxDP(count_cost.epsilon + cost.epsilon, cost.delta)
        return Fit(
            model=mrf.replace(unflatten_tables(theta, self._shapes(mrf))),
            history=_history(lots, source == "public"),
            info={
                "noise_multiplier": sigma,
                "noise_std": plan.scale,
                "sampling_rate": q,
                "steps": steps,
                "total": n_used,
                "total_source": source,
                "spent": spent,
                "budget": budget,
            },
        )

    @staticmethod
    def _shapes(mrf: MarkovRandomField) -> tuple:
        return tuple(tuple(mrf.domain.sizes(c)) for c in mrf.cliques)

    def _calibrate(self, n_used: float, target: ApproxDP, dim: int):
        """``(q, steps, sigma, cost, plan)`` of DP-SGD for ``N = n_used`` records: the
        sampling rate ``q = L / N``, the steps, the calibrated noise multiplier, its cost and
        the Gaussian's lattice plan. Public numbers only."""
        q = min(1.0, self.batch_size / n_used)
        steps = max(1, math.ceil(self.epochs / q))
        sigma = calibrate_noise_multiplier(target, q, steps, self.accountant_kind)
        cost = dpsgd_cost(sigma, q, steps, target.delta, self.accountant_kind)
        # Noise sigma * (clip + slack) on a lattice g Z, the clipped sum rounded to it: the
        # rounding adds at most g sqrt(dim) = slack to the L2 sensitivity.
        plan = plan_gaussian(self.clip, 0.5 / sigma**2, size=dim, integer_input=False, bits=14)
        return q, steps, sigma, cost, plan

    def _steps(self, jt, mrf, codes, lots, plan, denom, gen) -> np.ndarray:
        """Run the ``len(lots)`` steps in jit-compiled chunks (module docstring); ``theta``."""
        shapes = tuple(tuple(mrf.domain.sizes(c)) for c in mrf.cliques)
        axes = tuple(tuple(mrf.domain.index(v) for v in c) for c in mrf.cliques)
        dim, steps = sum(math.prod(s) for s in shapes), len(lots)
        width = max(_BUCKET, -(-max(lot.size for lot in lots) // _BUCKET) * _BUCKET)
        per_step = dim + width * (codes.shape[1] + 1) + 1
        chunks = -(-steps // max(1, _CHUNK_CELLS // per_step))
        length = -(-steps // chunks)  # balanced chunks: padding is under one step per chunk
        run = _run_steps_fn(jt, axes, shapes)
        theta = jnp.zeros(dim)
        g = math.ldexp(1.0, plan.exponent)
        bar = tqdm(total=steps, desc="PSGD", disable=not self.progress)
        for start in range(0, steps, length):
            stop = min(steps, start + length)
            lot_codes = np.zeros((length, width, codes.shape[1]), dtype=codes.dtype)
            masks = np.zeros((length, width))
            for j, lot in enumerate(lots[start:stop]):
                lot_codes[j, : lot.size] = codes[lot]
                masks[j, : lot.size] = 1.0
            noise = np.zeros((length, dim))
            for j in range(stop - start):  # one exact draw per step: chunking cannot matter
                noise[j] = lattice_noisy(np.zeros(dim), plan, gen)
            rates = np.zeros(length)
            rates[: stop - start] = self.learning_rate / np.sqrt(np.arange(start, stop) + 1.0)
            theta = run(theta, lot_codes, masks, noise, rates, self.clip, denom, g)
            bar.update(stop - start)
            tick("psgd", stop - start)
        bar.close()
        return np.asarray(theta)


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
                learner = replace(PSGD(**options), learning_rate=lr, clip=clip, batch_size=b)
                fit = learner.fit(data, mrf, budget=budget, rng=gen)
                value = float(score(fit.model))
                rows.append({"learning_rate": lr, "clip": clip, "batch_size": b, "score": value})
                if best is None or value > best[0]:
                    best = (value, fit)
    return best[1], rows
