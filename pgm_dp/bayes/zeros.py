"""Structural zeros: the cells of a release's tables that the release itself shows empty.

Contract: :func:`structural_zeros` flags, per cell of every released table, whether the
release is evidence that no record has it; :func:`zero_offsets` turns the flags into the
log-potential offsets that fix those cells' model probability at zero
(:class:`~pgm_dp.bayes.model.Problem`'s ``offset``).

Rule (our choice). A cell ``x_C`` of a released clique ``C`` gets an estimate of its count
from every released table ``D`` that contains it (``D ⊇ C``, ``C`` itself included): the
sum of ``D``'s noisy cells that extend ``x_C``, with variance ``k_D v_D`` (``k_D`` the
cells summed, ``v_D`` the noise variance of one). The estimates are combined by inverse
variance, ``m = sum_D w_D y_D / sum_D w_D`` with sd ``s = (sum_D w_D)^-1/2``, and the cell
is a structural zero when ``m <= t s`` (``t``: ``threshold``, :data:`ZERO_THRESHOLD`),
unless that would flag every cell of the table. A table that contains a flagged cell's
sub-cell needs no flag of its own: the model's marginal there is zero already.

Why it is valid. The rule reads the noisy release only, so it is post-processing and
costs no privacy (Dwork & Roth 2014, Prop. 2.1). Statistically it is an empirical-Bayes
step: the prior then puts a point mass at zero on the flagged cells (the log-potential at
:data:`ZERO_LOG_POTENTIAL`, so the cell and every cell extending it have probability
``e^-40`` relative to the rest), and the posterior is conditional on the flags. Without it
the prior's shrinkage of each log-potential towards zero gives an impossible cell the mass
of its neighbours (as in log-linear models with structural zeros, where a cell known to be
empty is left out of the model rather than estimated: Bishop, Fienberg & Holland 1975,
Ch. 5): on a release of Adult with an age group derived from the age, the intervals of
such cells excluded 0 and missed their neighbours. A true zero is flagged with
probability about ``Phi(t)``; a cell of count ``n`` with about ``Phi(t - n / s)``
(Gaussian approximation of the combined noise), so a flag costs coverage only on cells
whose count is within a few ``s`` of zero.
"""

from __future__ import annotations

import math

import numpy as np

from ..select.bounds import marginalise

__all__ = ["ZERO_LOG_POTENTIAL", "ZERO_THRESHOLD", "structural_zeros", "zero_offsets"]

#: The default ``t`` of the rule (module docstring): a cell whose combined noisy count is
#: at most zero is a structural zero.
ZERO_THRESHOLD = 0.0
#: The log-potential offset of a structural zero: ``e^-40`` relative mass.
ZERO_LOG_POTENTIAL = -40.0


def structural_zeros(problem, threshold: float = ZERO_THRESHOLD) -> np.ndarray:
    """The flat mask of structural zeros of a prepared release (module docstring).

    Args:
        problem: a :class:`~pgm_dp.bayes.model.Problem` (its ``y``, ``variance``, cliques
            and table shapes).
        threshold: ``t`` of the rule, in standard deviations of the combined estimate.
    """
    offsets = np.cumsum([0, *(math.prod(s) for s in problem.shapes)])
    cells = zip(offsets[:-1], offsets[1:], problem.shapes, strict=True)
    tables = [np.asarray(problem.y[a:b], dtype=float).reshape(s) for a, b, s in cells]
    var = [float(np.asarray(problem.variance)[a]) for a in offsets[:-1]]
    flags = []
    for c, shape in zip(problem.cliques, problem.shapes, strict=True):
        weight, total = np.zeros(shape), np.zeros(shape)
        for d, t, v in zip(problem.cliques, tables, var, strict=True):
            if not set(c) <= set(d) or v <= 0:
                continue
            k = math.prod(t.shape) / math.prod(shape)  # cells of d summed per cell of c
            weight += 1.0 / (k * v)
            total += marginalise(t, tuple(d), tuple(c)) / (k * v)
        if not np.all(weight > 0):  # noiseless: the release is the data's table
            flags.append(np.ravel(tables[problem.cliques.index(c)] <= 0))
            continue
        flag = total / weight <= threshold / np.sqrt(weight)
        flags.append(np.ravel(flag & ~np.all(flag)))
    return np.concatenate(flags)


def zero_offsets(problem, threshold: float | None = ZERO_THRESHOLD) -> np.ndarray:
    """Per cell, :data:`ZERO_LOG_POTENTIAL` where :func:`structural_zeros` flags the cell
    and 0 elsewhere; all zeros for ``threshold=None`` (no structural zeros)."""
    if threshold is None:
        return np.zeros(problem.size)
    return np.where(structural_zeros(problem, threshold), ZERO_LOG_POTENTIAL, 0.0)
