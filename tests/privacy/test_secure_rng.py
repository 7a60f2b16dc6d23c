"""Issue #16 (2): with ``rng=None`` the noise comes from a cryptographically secure generator."""

import numpy as np

from pgm_dp import Domain
from pgm_dp.privacy import PureDP, release_marginals
from pgm_dp.privacy.samplers import as_generator
from pgm_dp.rng import secure_generator


def test_default_generator_is_chacha20_keyed_from_os():
    g = as_generator(None)
    assert type(g.bit_generator).__name__ == "ChaCha"
    a, b = secure_generator().integers(0, 2**62, 4), secure_generator().integers(0, 2**62, 4)
    assert not np.array_equal(a, b)  # fresh OS key each time


def test_release_without_rng_uses_the_secure_generator(monkeypatch):
    import pgm_dp.rng as rng_mod

    seen = []
    real = rng_mod.secure_generator

    def spy():
        g = real()
        seen.append(type(g.bit_generator).__name__)
        return g

    monkeypatch.setattr(rng_mod, "secure_generator", spy)
    dom = Domain(["A", "B"], [2, 2])
    release_marginals(np.array([[0, 1], [1, 1]]), [("A", "B")], dom, budget=PureDP(1.0))
    assert seen and set(seen) == {"ChaCha"}


def test_seed_still_reproduces():
    assert as_generator(3).integers(100) == as_generator(3).integers(100)
    assert type(as_generator(3).bit_generator).__name__ == "PCG64"
