"""Package-wide numerical configuration: float64 in JAX, and the compile options of its programs.

KL divergences and log-likelihoods of models with thousands of cells lose several digits in
float32, so pgm_dp enables ``jax_enable_x64`` when it is imported (the user need not).
:func:`jit_program` is the ``jax.jit`` every layer uses for programs that run
junction-tree passes.
"""

from __future__ import annotations

import functools

import jax

jax.config.update("jax_enable_x64", True)

__all__ = ["any_traced", "jit_program"]


def any_traced(arrays) -> bool:
    """Whether any of ``arrays`` is a JAX tracer (we are inside ``jit``/``grad``/``vmap``)."""
    return any(isinstance(t, jax.core.Tracer) for t in arrays)


#: XLA:CPU compile options for the programs that run junction-tree passes. YNNPACK reduction
#: fusions split each fused product-and-sum of a message into two kernels, and Eigen's
#: multi-threaded matrix products synchronise a thread pool for every one of a pass's small
#: products; without them the all-clique marginals of the third-order chain (T=10, k=10)
#: take ~1.4x and another ~1.35x less time, and single-threaded products were no slower on
#: that chain with k = 20 or 40 nor on an Erdős–Rényi graph (``benchmarks/bench_inference.py``).
_CPU_COMPILER_OPTIONS = {
    "xla_cpu_experimental_ynn_fusion_type": "",
    "xla_cpu_multi_thread_eigen": False,
}


@functools.cache
def _compiler_options() -> dict | None:
    """Those of :data:`_CPU_COMPILER_OPTIONS` that this XLA knows, on the CPU backend."""
    if jax.default_backend() != "cpu":
        return None
    known = {}
    for name, value in _CPU_COMPILER_OPTIONS.items():
        try:
            jax.jit(lambda x: x + 1, compiler_options={name: value}).lower(1.0).compile()
        except Exception:  # an XLA without the option: keep its default
            continue
        known[name] = value
    return known or None


def jit_program(fn):
    """``jax.jit(fn)`` with :data:`_CPU_COMPILER_OPTIONS` where the backend takes them, for
    programs that run junction-tree passes (the eager marginals, the learners' objectives
    and loops). JAX accepts compiler options only on a top-level ``jit``: called with traced
    arguments (inside another ``jit``/``grad``) the plain ``jax.jit(fn)`` runs instead."""
    options = _compiler_options()
    top = jax.jit(fn, compiler_options=options)
    if options is None:
        return top
    nested = jax.jit(fn)

    @functools.wraps(fn)
    def call(*args):
        return (nested if any_traced(jax.tree_util.tree_leaves(args)) else top)(*args)

    return call
