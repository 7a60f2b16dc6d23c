"""Private Frank-Wolfe over an L1 ball (Zhang et al. 2020, Alg. 1, ``A_PFW``; Talwar et al. 2014).

Problem: ``min_{||w||_1 <= C} L(w; D) = (1/n) sum_m l(<w, x_m>, y_m)`` for a loss of a linear
predictor with per-record gradients ``l'(<w, x>, y) x`` (here the logistic loss
``log(1 + exp(-y <w, x>))``, Cor. 3.4). The feasible set is ``conv(S)`` with the ``2d`` vertices
``S = {±C e_j}``, so ``||C||_1 = C``. For ``t = 1 .. T-1`` (Alg. 1):

* line 3: every vertex ``s`` scores ``alpha_s = <s, grad L(w; D)> + Lap(L1 ||C||_1 sqrt(T) /
  (n sqrt(rho)))`` — drawn by the privacy layer's report-noisy-min
  (:func:`pgm_dp.privacy.report_noisy_min`);
* line 4-5: ``w <- (1 - mu_t) w + mu_t s*`` with ``s*`` the noisy arg-min, ``mu_t = 2/(t+2)``;

starting from ``w = 0`` (line 1 leaves the start open; 0 is in every ball). ``T`` defaults to
Lemma 3.3's ``Gamma^(2/3) (n sqrt(rho))^(2/3) / (L1 ||C||_1^(2/3))`` with the curvature bound
``Gamma <= ||C||_1^2`` of Lemma 3.5 (``||x||_inf <= 1``, logistic Hessian ``<= 1/4 <= 1``), capped
at ``max_steps`` (our choice, to bound the running time; the paper has no cap).

Privacy constant ``L1`` (our reading, stated here because the paper's proof is loose). The
scale above is the paper's formula. Each vertex score has sensitivity ``2 G ||C||_1 / n``
between neighbouring data sets (one record replaced; ``G`` = the bound on a record's
``||grad l||_inf``, 1 for the logistic loss with ``||x||_inf <= 1``) and the ``±C e_j`` scores
move in opposite directions, so report-noisy-min needs the scale ``2 Delta / eps`` (Dwork &
Roth 2014, Claim 3.9 applied to shifted scores). With the per-step ``eps = sqrt(2 rho / T)``
(``rho / T``-zCDP, Lemma 2.14; ``T`` steps compose to ``rho``, Lemma 2.15) the formula is
exactly that scale when ``L1 = 2 sqrt(2) G``; we therefore use ``L1 = 2 sqrt(2) G`` (2.83 for
the logistic loss) where Cor. 3.4 uses ``L1 = 2``, whose scale is ``sqrt(2)`` too small for
``rho``-zCDP under this analysis.

The whole run is charged to the accountant as ``ZCDP(rho)`` once, after every input is
checked and before the first noise is drawn; ``rho = inf`` (or ``None``) is the non-private
Frank-Wolfe (exact arg-min, ``max_steps`` iterations), the paper's non-private reference.

Many problems on the same records (Alg. 2's ``p`` nodes, Alg. 3's ``k^2 p`` sub-problems) are
solved together: features ``F`` ``(n, d)`` are shared; problem ``b`` has labels ``Y[:, b]``,
a row subset ``rows[:, b]`` (its ``n_b`` records, possibly none) and the coordinates
``cols[b]`` it may use (its vertices). All steps of all problems run as one compiled
``lax.fori_loop`` over the distinct records (with their multiplicities: the same sums).

What depends on the data (neighbours: one record replaced, ``n`` public, the paper's
relation, its Sec. 2). Alg. 1's scale on the mean scores, ``c / n_b`` with ``c = L1 ||C||_1
sqrt(T) / sqrt(rho)``, reveals ``n_b``; the noisy arg-min is the same as report-noisy-min on
the *summed* scores ``n_b <s, grad L_b>`` with the scale ``c`` (sensitivity ``2 G ||C||_1``
whatever ``n_b``), which is what runs here. ``T``, ``c``, the noise lattice and every refusal
are functions of ``n``, ``d``, ``rho``, ``||C||_1`` and the public ``size`` that sets ``T``
(Lemma 3.3 with ``n = size``; default the number of rows), never of the ``n_b``.
Floating-point safety as in :func:`~pgm_dp.privacy.report_noisy_min`, whose selection the
loop reproduces exactly: the exact discrete Laplace noise of every step is drawn up front (in
chunks of at most ``_CHUNK`` values) by the privacy layer's sampler, in lattice units of
:func:`~pgm_dp.privacy.argmax.noisy_min_lattice`; inside the loop each summed score is
rounded to the lattice (``rint(s / 2^k)``, exact integers) and the arg-max of ``-units +
noise`` is taken on integers. Given the same noise, the compiled loop selects what the
per-step calls would.

>>> import numpy as np
>>> X = np.array([[1.0, 0.0], [1.0, 1.0], [-1.0, 0.0], [-1.0, -1.0]])
>>> y = np.array([1.0, 1.0, -1.0, -1.0])
>>> w = private_frank_wolfe(X, y, radius=1.0, rho=None, steps=200).w
>>> bool(abs(np.abs(w).sum() - 1.0) < 1e-3 and w[0] > 0.99)
True
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np

from ...errors import DataValidationError, PrivacyParameterError
from ...privacy import ZCDP, Accountant, frank_wolfe_step_budget
from ...privacy.argmax import noisy_min_lattice
from ...privacy.samplers import sample_discrete_laplace
from ...rng import RngLike, as_generator

#: at most this many pre-drawn noise values (int64) per compiled call (64 MiB)
_CHUNK = 1 << 23

__all__ = [
    "LOGISTIC",
    "FWResult",
    "Loss",
    "frank_wolfe_batch",
    "check_steps",
    "lemma33_steps",
    "pfw_lipschitz",
    "pfw_noise_scale",
    "private_frank_wolfe",
]


@dataclass(frozen=True)
class Loss:
    """A loss of a linear predictor: ``value(margin, y)`` per record, ``grad_bound`` ``G``
    bounding ``|d value / d margin|`` (so ``||grad l||_inf <= G`` when ``||x||_inf <= 1``)."""

    name: str
    value: Callable[[jax.Array, jax.Array], jax.Array] = field(repr=False)
    grad_bound: float


LOGISTIC = Loss("logistic", lambda m, y: jnp.logaddexp(0.0, -y * m), 1.0)


@dataclass(frozen=True)
class FWResult:
    """Frank-Wolfe output: ``w`` ``(d,)`` or ``(B, d)``, the steps, the zCDP cost and
    ``sum_scale``, the scale on the summed scores ``n_b <s, grad L_b>`` that the selection
    uses (module doc): a function of ``T``, ``rho`` and ``||C||_1`` only, the same for every
    problem, and what the accountant records. Alg. 1's scale on the mean scores,
    ``sum_scale / n_b``, is not returned: it would give each problem's number of records
    ``n_b`` exactly (a count of the data, never noised); :func:`pfw_noise_scale` computes it
    from a public ``n``.
    """

    w: np.ndarray
    steps: int
    spent: ZCDP | None
    sum_scale: float = 0.0


def pfw_lipschitz(grad_bound: float) -> float:
    """``L1 = 2 sqrt(2) G``: the constant making Alg. 1's scale ``rho``-zCDP (module doc).

    >>> round(pfw_lipschitz(1.0), 4)
    2.8284
    """
    return 2.0 * math.sqrt(2.0) * grad_bound


def pfw_noise_scale(lipschitz: float, radius: float, steps: int, n: int, rho: float) -> float:
    """Alg. 1 line 3: the Laplace scale ``L1 ||C||_1 sqrt(T) / (n sqrt(rho))``.

    >>> pfw_noise_scale(2.0, 1.0, 100, 1000, 1.0)
    0.02
    """
    return lipschitz * radius * math.sqrt(steps) / (n * math.sqrt(rho))


def lemma33_steps(
    n: float, rho: float, lipschitz: float, radius: float, curvature: float | None = None
) -> int:
    """Lemma 3.3's ``T = Gamma^(2/3) (n sqrt(rho))^(2/3) / (L1 ||C||_1^(2/3))`` (at least 2),
    with ``Gamma = ||C||_1^2`` (Lemma 3.5) unless given.

    >>> lemma33_steps(1000, 1.0, 2.0, 1.0)
    50
    """
    gamma = radius**2 if curvature is None else curvature
    t = gamma ** (2 / 3) * (n * math.sqrt(rho)) ** (2 / 3) / (lipschitz * radius ** (2 / 3))
    return max(2, math.ceil(t - 1e-9))


def check_steps(steps: int | None, max_steps: int) -> None:
    """DataValidationError unless ``steps`` (or, when it is ``None``, ``max_steps``) is an
    integer ``>= 2``: callers that spend budget before Frank-Wolfe runs check it first."""
    for name, value in (("steps", steps), ("max_steps", max_steps)):
        if value is None:
            continue
        try:
            ok = not isinstance(value, bool) and int(value) == value and value >= 2
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            raise DataValidationError(f"{name} must be an integer >= 2, got {value!r}")
        if name == "steps":
            return


@functools.lru_cache(maxsize=8)
def _program(loss: Loss, private: bool):
    """Alg. 1 lines 2-5 for steps ``t0 .. t0 + count - 1`` of every problem, one compiled
    ``lax.fori_loop``. Records are the unique rows of the data with their multiplicities
    ``weight`` (the same sums as over all rows). The scores are the summed ``n_b <s, grad
    L_b>`` (module doc; the same arg-min as the means'). Private: they are rounded to the
    lattice ``2^k`` exactly as :func:`~pgm_dp.privacy.report_noisy_min` does (``rint(s /
    2^k)``, exact integers) and the pre-drawn exact discrete Laplace ``noise[s]`` (lattice
    units) is added before the row-wise arg-max of ``-units + noise``: the same selection,
    ties to the first."""
    slope = jax.vmap(jax.grad(loss.value))

    def run(state, F, Y, R, weight, idx, radius, k, noise, t0, count):
        b = jnp.arange(Y.shape[1])
        width = idx.shape[1]

        def body(s, carry):
            w, margins = carry  # (d, B), (u, B)
            dl = slope(margins.ravel(), Y.ravel()).reshape(margins.shape) * R * weight[:, None]
            g = (F.T @ dl).T[b[:, None], idx]  # (B, m) summed gradients, problem's coordinates
            score = radius * jnp.concatenate([g, -g], axis=1)  # n_b <s, grad L_b>, s = +-C e_j
            if private:
                units = jnp.rint(jnp.ldexp(score, -k)).astype(jnp.int64)
                pick = jnp.argmax(-units + noise[s], axis=1)
            else:
                pick = jnp.argmin(score, axis=1)
            cols = idx[b, pick % width]
            signs = jnp.where(pick < width, radius, -radius)
            mu = 2.0 / (t0 + s + 2)
            vertex = jnp.zeros_like(w).at[cols, b].set(signs)
            return (1 - mu) * w + mu * vertex, (1 - mu) * margins + mu * F[:, cols] * signs

        return jax.lax.fori_loop(0, count, body, state)

    return jax.jit(run)


def _unique_rows(F, Y, R):
    """The distinct rows of ``[F, Y, R]`` in order of first occurrence and their counts."""
    key = np.ascontiguousarray(np.hstack([F, Y, R]))
    _, first, counts = np.unique(key, axis=0, return_index=True, return_counts=True)
    order = np.argsort(first)
    rows = first[order]
    return F[rows], Y[rows], R[rows], counts[order].astype(np.float64)


def _check_batch(features, labels, rows, cols):
    F = np.array(features, dtype=np.float64)
    Y = np.array(labels, dtype=np.float64)
    if F.ndim != 2 or Y.ndim != 2 or Y.shape[0] != F.shape[0] or F.shape[0] < 1:
        raise DataValidationError(f"features (n, d) and labels (n, B) needed: {F.shape}, {Y.shape}")
    if not np.all(np.isfinite(F)) or np.max(np.abs(F), initial=0.0) > 1.0:
        raise DataValidationError("features must be finite with |x| <= 1 (Cor. 3.4)")
    if not np.all(np.isin(Y, (-1.0, 1.0))):
        raise DataValidationError("labels must be -1 or +1")
    R = np.ones_like(Y) if rows is None else np.array(rows, dtype=np.float64)
    mask = np.ones((Y.shape[1], F.shape[1]), bool) if cols is None else np.array(cols, bool)
    if R.shape != Y.shape or not np.all(np.isin(R, (0.0, 1.0))) or mask.shape[0] != Y.shape[1]:
        raise DataValidationError("rows must be a 0/1 (n, B) mask and cols a (B, d) mask")
    if np.any(mask.sum(axis=1) < 1):  # a problem without records is allowed (data-dependent)
        raise DataValidationError("every problem needs at least one coordinate")
    return F, Y, R, mask


def _run(F, Y, R, mask, radius, steps, private, loss, k, t, gen) -> np.ndarray:
    """Steps ``1 .. steps - 1`` of Alg. 1 from ``w = 0``, in chunks of at most ``_CHUNK``
    noise values (one compiled call each); returns ``w`` ``(d, B)``."""
    F, Y, R, weight = _unique_rows(F, Y, R)
    idx = np.stack([np.flatnonzero(m) for m in mask])  # (B, m): each problem's coordinates
    B = Y.shape[1]
    shape = (B, 2 * idx.shape[1])
    per = max(1, min(steps - 1, _CHUNK // (B * shape[1])))
    run = _program(loss, private)
    args = tuple(map(jnp.asarray, (F, Y, R, weight, idx)))
    state = (jnp.zeros((F.shape[1], B)), jnp.zeros(Y.shape))
    for t0 in range(1, steps, per):
        count = min(per, steps - t0)
        noise = np.zeros((per, *shape), dtype=np.int64)
        if private:
            noise[:count] = sample_discrete_laplace(t, (count, *shape), gen)
        state = run(state, *args, radius, k, jnp.asarray(noise), t0, count)
    return np.asarray(state[0])


def frank_wolfe_batch(
    features,
    labels,
    *,
    radius: float,
    rho: float | None,
    rows=None,
    cols=None,
    steps: int | None = None,
    max_steps: int = 2000,
    size: float | None = None,
    loss: Loss = LOGISTIC,
    rng: RngLike = None,
    accountant: Accountant | None = None,
    what: str = "private Frank-Wolfe",
) -> FWResult:
    """Alg. 1 on ``B`` problems sharing ``features``; each spends ``rho`` (``ZCDP(B rho)`` in
    all, charged once). ``rows`` ``(n, B)`` 0/1 and ``cols`` ``(B, d)`` bool select each
    problem's records and vertices. ``size``: the public number of records that sets ``T``
    by Lemma 3.3 when ``steps`` is ``None`` (default ``n``, the number of rows); nothing here
    reads the ``n_b`` (module doc).
    """
    F, Y, R, mask = _check_batch(features, labels, rows, cols)
    if len(set(mask.sum(axis=1).tolist())) != 1:
        raise DataValidationError("every problem must have the same number of coordinates")
    if not math.isfinite(radius) or radius <= 0:
        raise DataValidationError(f"radius must be finite and > 0, got {radius}")
    check_steps(steps, max_steps)
    private = rho is not None and math.isfinite(rho)
    if rho is not None and not rho > 0:
        raise PrivacyParameterError(f"rho must be > 0 (or None / inf: non-private), got {rho}")
    n = F.shape[0]
    size = float(n) if size is None else float(size)
    if not (math.isfinite(size) and size > 0):
        raise DataValidationError(f"size must be finite and > 0, got {size!r}")
    lip = pfw_lipschitz(loss.grad_bound)
    if steps is None:
        steps = min(max_steps, lemma33_steps(size, rho, lip, radius)) if private else max_steps
    steps = int(steps)
    B = Y.shape[1]
    spent = ZCDP(B * rho) if private else None
    sum_scale = pfw_noise_scale(lip, radius, steps, 1, rho) if private else 0.0
    step_budget = frank_wolfe_step_budget(rho, steps) if private else None
    sensitivity = sum_scale * step_budget.epsilon / 2 if private else 0.0  # scale = 2 Delta/eps
    k, t = noisy_min_lattice(sensitivity, step_budget) if private else (0, Fraction(0))
    if math.ldexp(radius * loss.grad_bound * n, -k) >= 2.0**52:  # |summed score| <= C G n
        raise DataValidationError("scores too large for the exact noise lattice (|s| / 2^k)")
    if private and accountant is not None:
        accountant.charge(spent, what=what, mechanism="report_noisy_min", scale=sum_scale)
    w = _run(F, Y, R, mask, radius, steps, private, loss, k, t, as_generator(rng))
    return FWResult(w.T, steps, spent, sum_scale)


def private_frank_wolfe(
    features,
    labels,
    *,
    radius: float,
    rho: float | None,
    steps: int | None = None,
    max_steps: int = 2000,
    loss: Loss = LOGISTIC,
    rng: RngLike = None,
    accountant: Accountant | None = None,
) -> FWResult:
    """Alg. 1 (``A_PFW``) on one problem: ``features`` ``(n, d)``, ``labels`` ``(n,)`` ±1,
    ``C = {||w||_1 <= radius}``; ``rho``-zCDP (``None``/``inf``: non-private)."""
    y = np.asarray(labels, dtype=np.float64)
    if y.ndim != 1:
        raise DataValidationError(f"labels must be 1-d, got shape {y.shape}")
    res = frank_wolfe_batch(
        features,
        y[:, None],
        radius=radius,
        rho=rho,
        steps=steps,
        max_steps=max_steps,
        loss=loss,
        rng=rng,
        accountant=accountant,
    )
    return FWResult(res.w[0], res.steps, res.spent, res.sum_scale)
