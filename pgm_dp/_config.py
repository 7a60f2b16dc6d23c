"""Package-wide numerical configuration: float64 in JAX, the persistent compilation cache,
and the compile options of its programs.

KL divergences and log-likelihoods of models with thousands of cells lose several digits in
float32, so pgm_dp enables ``jax_enable_x64`` when it is imported (the user need not).
:func:`jit_program` is the ``jax.jit`` every layer uses for programs that run
junction-tree passes.

**Compilation cache.** A learner's first fit in a process compiles its programs (tens of seconds
for CGM-EM); JAX's persistent compilation cache keeps them on disk for the next process. It is on
by default, for the ``pgm-dp`` command and for library users alike: this module (imported with
the first module that uses JAX, not by ``import pgm_dp`` itself) points JAX at the cache
folder, which costs no more than creating the folder. Settings, read when it is imported:

* ``PGM_DP_NO_CACHE=1``: leave JAX's cache alone (off, unless configured otherwise);
* ``PGM_DP_CACHE_DIR``: the folder (default: the platform's cache folder,
  :func:`default_cache_dir`, e.g. ``~/.cache/pgm_dp/xla`` on Linux);
* a cache folder already set in JAX (``JAX_COMPILATION_CACHE_DIR`` or
  ``jax.config.update("jax_compilation_cache_dir", ...)``) is kept as it is.

:func:`enable_compilation_cache` turns it on explicitly (e.g. after opting out).
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import jax
from threadpoolctl import ThreadpoolController

jax.config.update("jax_enable_x64", True)

__all__ = [
    "any_traced",
    "default_cache_dir",
    "enable_compilation_cache",
    "jit_program",
    "one_blas_thread",
]


def default_cache_dir() -> Path:
    """``$PGM_DP_CACHE_DIR``, else ``pgm_dp/xla`` in the platform's cache folder:
    ``$XDG_CACHE_HOME`` (default ``~/.cache``) on Linux, ``~/Library/Caches`` on macOS,
    ``%LOCALAPPDATA%`` on Windows."""
    if os.environ.get("PGM_DP_CACHE_DIR"):
        return Path(os.environ["PGM_DP_CACHE_DIR"]).expanduser()
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local"
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "pgm_dp" / "xla"


def enable_compilation_cache(path: str | os.PathLike | None = None) -> Path:
    """Keep compiled XLA programs on disk (JAX's persistent compilation cache), so a new
    process reuses the learners' programs instead of compiling them again.

    ``path`` defaults to :func:`default_cache_dir`. Called when this module is imported
    (see the module docstring for the opt-out). Every program is kept, however quickly it
    compiled: with a floor the small ones (a learner's start, eager set-up) were compiled
    again in every process, and the programs are small (``benchmarks/README.md``). Returns
    the folder; an ``OSError`` if it cannot be made.
    """
    folder = default_cache_dir() if path is None else Path(path).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    return folder


def _cache_by_default() -> None:
    """:func:`enable_compilation_cache` unless opted out or JAX already has a cache folder;
    a folder that cannot be made leaves the cache off (programs compile as usual)."""
    if os.environ.get("PGM_DP_NO_CACHE", "").strip() not in ("", "0"):
        return
    if jax.config.jax_compilation_cache_dir:
        return
    try:
        enable_compilation_cache()
    except OSError:
        pass


_cache_by_default()


def _register_pytrees() -> None:
    """Register the package's pytree types that were imported before JAX (their modules
    register themselves when imported after it): a lookup, not an import, so this bottom
    layer depends on nothing above it."""
    for name in ("pgm_dp.privacy.measurements",):
        module = sys.modules.get(name)
        if module is not None:
            module.register_pytree()


_register_pytrees()


def any_traced(arrays) -> bool:
    """Whether any of ``arrays`` is a JAX tracer (we are inside ``jit``/``grad``/``vmap``)."""
    return any(isinstance(t, jax.core.Tracer) for t in arrays)


#: XLA:CPU compile options for the programs that run junction-tree passes: no YNNPACK
#: reduction fusions (they split a message's fused product-and-sum into two kernels) and
#: single-threaded Eigen products (a pass's many small products would each synchronise a
#: thread pool). Measurements: ``docs/performance.md``.
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


def one_blas_thread():
    """A context in which NumPy's BLAS runs on one thread: scipy's L-BFGS-B calls it on
    vectors of a few hundred to a few thousand entries, where waking a thread pool costs
    more than the work (``docs/performance.md``)."""
    return _blas_controller().limit(limits=1, user_api="blas")


@functools.cache
def _blas_controller() -> ThreadpoolController:
    """The process's thread pools, inspected once: building a controller walks the loaded
    shared libraries, which a small learner fit used to pay twice."""
    return ThreadpoolController()
