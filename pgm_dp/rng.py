"""Randomness: every random function of pgm_dp takes a seed, a Generator or ``None``.

``None`` (the default everywhere) gives a **cryptographically secure** generator: a numpy
:class:`~numpy.random.Generator` over ``randomgen``'s ChaCha20 (20 rounds, Bernstein 2008)
keyed with 256 bits from the operating system (:func:`secrets.randbits`). A private release
must use it (or a secret seed): an integer seed makes the noise reproducible, so anyone who
knows or guesses the seed subtracts the noise and recovers every count. Seeds are for
experiments and tests; an int seed gives numpy's PCG64 (fast, not cryptographic).
"""

from __future__ import annotations

import secrets
import zlib

import numpy as np
from randomgen import ChaCha

__all__ = ["as_generator", "derived_generator", "secure_generator", "RngLike"]

RngLike = np.random.Generator | int | None


def secure_generator() -> np.random.Generator:
    """A Generator over ChaCha20 keyed from the OS entropy source (256-bit key).

    >>> type(secure_generator().bit_generator).__name__
    'ChaCha'
    """
    return np.random.Generator(ChaCha(key=secrets.randbits(256), rounds=20))


def as_generator(rng: RngLike | np.random.SeedSequence = None) -> np.random.Generator:
    """Return a numpy Generator: a Generator is used as is, an int/SeedSequence seeds a new one.

    ``None`` gives :func:`secure_generator` (ChaCha20, OS-keyed, not reproducible). A seed
    reproduces the noise exactly, so a seeded release protects nothing against whoever knows
    the seed: seeds are for experiments and tests; a real release uses ``None`` or a secret seed.

    >>> bool(as_generator(1).integers(10) == as_generator(1).integers(10))
    True
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        return secure_generator()
    if isinstance(rng, np.random.SeedSequence):
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
