"""Randomness: every random function of pgm_dp takes a seed, a Generator or ``None``."""

from __future__ import annotations

import numpy as np

__all__ = ["as_generator", "RngLike"]

RngLike = np.random.Generator | int | None


def as_generator(rng: RngLike) -> np.random.Generator:
    """A numpy ``Generator`` from a Generator (returned as is), a seed, or ``None`` (fresh
    OS entropy).

    >>> as_generator(0).integers(10) == as_generator(0).integers(10)
    True
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is not None and (isinstance(rng, bool) or not isinstance(rng, int | np.integer)):
        raise TypeError(f"rng must be a numpy Generator, an int seed or None, got {type(rng)}")
    return np.random.default_rng(rng)
