import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pgm_dp import Domain, MarkovRandomField
from pgm_dp.inference.junction_tree import clique_marginals
from pgm_dp.learners.cgm.noise import noise_curvature, noise_gradient, noise_log_density
from pgm_dp.privacy import NoiseModel
from pgm_dp.privacy.noise import LAPLACE_KINDS

KINDS = ["laplace", "discrete_laplace", "gaussian", "discrete_gaussian"]


@pytest.mark.parametrize("kind", KINDS)
def test_gradient_and_curvature_are_the_derivatives_of_the_log_density(rng, kind):
    y, n = rng.normal(50, 20, size=7), rng.normal(50, 20, size=7)
    scale, smoothing = 3.0, 0.7
    grad = jax.grad(lambda m: noise_log_density(kind, scale, smoothing, y, m))(n)
    hess = jax.hessian(lambda m: noise_log_density(kind, scale, smoothing, y, m))(n)
    np.testing.assert_allclose(noise_gradient(kind, scale, smoothing, y, n), grad, rtol=1e-10)
    np.testing.assert_allclose(np.diag(hess), -noise_curvature(kind, scale, smoothing, y, n))
    np.testing.assert_allclose(hess - np.diag(np.diag(hess)), 0.0)
    assert np.all(noise_curvature(kind, scale, smoothing, y, n) > 0)


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_a_small_damped_nlbp_step_shrinks_the_curvature_weighted_residual(rng, kind):
    # NLBP's safeguard (learners.cgm.nlbp) relies on this: the map F(n) = N BP(theta +
    # grad log p(y | n)) has Jacobian -N Cov diag(c), so d/dalpha sum c f^2 < 0 at alpha = 0.
    dom = Domain(["A", "B", "C"], [2, 3, 2])
    cliques = [("A", "B"), ("B", "C")]
    mrf = MarkovRandomField(dom, cliques, [rng.normal(size=dom.sizes(c)) for c in cliques])
    jt, total, scale = mrf.junction_tree(), 1000.0, 2.0
    sizes = [int(np.prod(dom.sizes(c))) for c in cliques]
    y = jnp.asarray(rng.uniform(0, 300, size=sum(sizes)))

    def split(v):
        parts = jnp.split(v, np.cumsum(sizes)[:-1])
        return [p.reshape(dom.sizes(c)) for p, c in zip(parts, cliques, strict=True)]

    def residual(n):
        shifted = [
            t + noise_gradient(kind, scale, 1.0, yc, nc)
            for t, yc, nc in zip(mrf.log_potentials, split(y), split(n), strict=True)
        ]
        margs, _ = clique_marginals(jt, shifted)
        return total * jnp.concatenate([m.ravel() for m in margs]) - n

    for _ in range(5):
        n = jnp.asarray(rng.uniform(0, 300, size=sum(sizes)))
        f = residual(n)
        c = noise_curvature(kind, scale, 1.0, y, n)
        jac = jax.jacfwd(residual)(n)  # J - I
        assert float(f @ (c * (jac @ f))) < 0


@pytest.mark.parametrize("kind", KINDS)
def test_the_e_step_density_is_the_release_noise_model_density(rng, kind):
    """One implementation: the E-step's density is the NoiseModel's, up to its constant
    and (Laplace kinds) the pseudo-Huber smoothing, within ``s / b`` of it."""
    y, n = rng.normal(50, 20, size=7), rng.normal(50, 20, size=7)
    model, smoothing = NoiseModel(kind, 3.0), 1e-7
    cells = [float(noise_log_density(kind, 3.0, smoothing, y[i], n[i])) for i in range(7)]
    offset = model.log_density(y, n) - np.array(cells)
    np.testing.assert_allclose(offset, offset[0], atol=1e-7)
    np.testing.assert_allclose(
        noise_gradient(kind, 3.0, smoothing, y, n), model.grad_log_density(y, n), rtol=1e-9
    )
    assert model.is_laplace == (kind in LAPLACE_KINDS) == kind.endswith("laplace")


@pytest.mark.parametrize("kinds", [("laplace", "laplace"), ("gaussian",) * 2, KINDS])
def test_flat_noise_model_is_the_per_clique_one(rng, kinds):
    # The E-step's flat kernels (one per vector, per-cell scales) equal the per-table ones.
    from pgm_dp.learners.cgm.noise import flat_noise

    shapes = [(3, 2), (4,), (2, 2, 2), (5,)][: len(kinds)]
    y = [rng.normal(40, 20, size=s) for s in shapes]
    n = [rng.normal(40, 20, size=s) for s in shapes]
    scales, smoothing = rng.uniform(1, 5, size=len(kinds)), 0.7
    sizes = [int(np.prod(s)) for s in shapes]
    gradient, curvature, log_density = flat_noise(kinds, smoothing, sizes)
    at = (np.concatenate([t.ravel() for t in y]), jnp.asarray(np.repeat(scales, sizes)))
    flat_n = np.concatenate([t.ravel() for t in n])
    per = list(zip(kinds, scales, y, n, strict=True))
    expect = [noise_gradient(k, b, smoothing, yc, nc) for k, b, yc, nc in per]
    got = gradient(at, flat_n)
    np.testing.assert_allclose(got, np.concatenate([np.ravel(e) for e in expect]), rtol=1e-14)
    expect = [noise_curvature(k, b, smoothing, yc, nc) for k, b, yc, nc in per]
    got = curvature(at, flat_n)
    np.testing.assert_allclose(got, np.concatenate([np.ravel(e) for e in expect]), rtol=1e-13)
    expect = [noise_log_density(k, b, smoothing, yc, nc) for k, b, yc, nc in per]
    np.testing.assert_allclose(log_density(at, flat_n), sum(expect), rtol=1e-13)
