"""Randomness: every random function of pgm_dp takes a seed, a Generator or ``None``."""

from __future__ import annotations

import zlib

import numpy as np

__all__ = ["as_generator", "derived_generator", "RngLike"]

RngLike = np.random.Generator | int | None


def as_generator(rng: RngLike | np.random.SeedSequence = None) -> np.random.Generator:
    """Return a numpy Generator: a Generator is used as is, an int/SeedSequence seeds a new one.

    ``None`` gives a fresh, OS-seeded generator (not reproducible).

    >>> bool(as_generator(1).integers(10) == as_generator(1).integers(10))
    True
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, np.random.SeedSequence):
        return np.random.default_rng(rng)
    if isinstance(rng, int | np.integer) and not isinstance(rng, bool):
        if int(rng) < 0:
            raise ValueError(f"seed must be non-negative, got {rng}")
        return np.random.default_rng(int(rng))
    raise TypeError(f"rng must be a numpy Generator, an int seed or None, got {type(rng)}")


def derived_generator(seed: int, *key) -> np.random.Generator:
    """An independent generator for ``key`` (e.g. ``("release", N, population, rep)``) under
    ``seed``: any one draw of an experiment can be reproduced on its own, whatever else ran.

    >>> a = derived_generator(0, "release", 3).random()
    >>> bool(a == derived_generator(0, "release", 3).random() != derived_generator(0, "x").random())
    True
    """
    words = [int(seed)] + [zlib.crc32(str(part).encode()) for part in key]
    return np.random.default_rng(np.random.SeedSequence(words))
