"""Inference backends: one object per way of computing marginals and ``log Z``.

A backend answers what every caller of inference asks (:class:`MarkovRandomField
<pgm_dp.models.MarkovRandomField>`'s ``marginals`` / ``log_partition``, CGM-EM's E-step,
its start): the marginals and ``log Z`` of a model's log-potentials, whether they are exact,
the counting numbers of its free energy, and a traceable program for repeated calls with a
warm state carried between them (loopy BP's messages). Every program reads and returns one
layout: the flat vector of all cliques' cells (:mod:`pgm_dp.tables`); a backend that
works on clique tables splits and joins them inside its program.

Backends are chosen by value: frozen dataclasses holding their options, hashable (compiled
programs are cached per backend). The built-in ones:

* :class:`JunctionTreeBackend` (``"junction_tree"``) — exact (:mod:`.junction_tree`);
* :class:`LoopyBP` (``"loopy_bp"``) — damped loopy BP, the Bethe approximation
  (:mod:`.loopy_bp`);
* :class:`TRW` (``"trw_bp"``) — tree-reweighted BP, a convex upper bound on ``log Z``
  (:mod:`.counting`'s counting numbers).

Every name is a shorthand: :func:`get_backend` turns a name (or a backend) and options into
a backend, and :func:`register_backend` adds one. Installed packages add backends through
the entry-point group ``pgm_dp.backends`` (a factory, e.g. the class), read on the first
name not registered here. Adding a backend is one module and one registration.

>>> get_backend("loopy_bp", damping=0.3).damping
0.3
>>> get_backend("trw_bp").exact, get_backend("junction_tree").exact
(False, True)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple, Protocol, runtime_checkable

import jax
import jax.numpy as jnp
import numpy as np

from .._config import any_traced
from ..domain import Clique, Domain
from ..tables import table_layout
from .counting import trw_counting_numbers
from .factor_graph import factor_graph
from .junction_tree import (
    DEFAULT_MAX_CELLS,
    build_junction_tree,
    clique_marginals,
    marginals_and_log_z,
)
from .loopy_bp import loopy_bp, loopy_bp_flat, uniform_messages
from .tables import concat_tables

__all__ = [
    "ENTRY_POINT_GROUP",
    "TRW",
    "Backend",
    "JunctionTreeBackend",
    "LoopyBP",
    "Schedule",
    "available_backends",
    "get_backend",
    "register_backend",
    "unregister_backend",
]

#: The entry-point group installed packages declare backends in.
ENTRY_POINT_GROUP = "pgm_dp.backends"


@runtime_checkable
class Backend(Protocol):
    """What an inference backend provides.

    ``model`` below is a :class:`~pgm_dp.models.MarkovRandomField` (anything with
    ``domain``, validated ``cliques``, ``log_potentials`` and ``max_cells``).

    * ``name``: its registry name; ``exact``: whether marginals and ``log Z`` are exact
      (CGM-EM's Newton E-step needs it).
    * :meth:`counting_numbers`: one per clique, or ``None`` (the Bethe entropy, or exact).
    * :meth:`marginals`, :meth:`log_partition`: per-clique tables in clique order and
      ``log Z``; NumPy when called eagerly, JAX arrays under a JAX transformation.
    * :meth:`program`: a traceable ``(flat theta, *warm) -> (flat marginals, log Z,
      converged, *warm)`` for one structure, called many times, on the flat vector of all
      cliques' cells in clique order (:mod:`pgm_dp.tables`; the marginals in the same
      layout); :meth:`warm_start` the first ``warm`` (``()`` for a backend without state).
    """

    name: str
    exact: bool

    def counting_numbers(self, domain: Domain, cliques: tuple[Clique, ...]) -> Any: ...

    def marginals(self, model) -> tuple: ...

    def log_partition(self, model) -> Any: ...

    def program(self, domain: Domain, cliques: tuple[Clique, ...], max_cells: int) -> Callable: ...

    def warm_start(self, domain: Domain, cliques: tuple[Clique, ...]) -> tuple: ...


@dataclasses.dataclass(frozen=True)
class JunctionTreeBackend:
    """Exact inference by junction tree (:mod:`.junction_tree`); no options, no state."""

    name: ClassVar[str] = "junction_tree"
    exact: ClassVar[bool] = True

    def counting_numbers(self, domain, cliques):
        return None

    def _tree(self, model):
        return build_junction_tree(model.domain, model.cliques, model.max_cells, validated=True)

    def marginals(self, model) -> tuple:
        return clique_marginals(self._tree(model), model.log_potentials)[0]

    def log_partition(self, model):
        return clique_marginals(self._tree(model), model.log_potentials, ())[1]

    def program(self, domain, cliques, max_cells=DEFAULT_MAX_CELLS) -> Callable:
        jt = build_junction_tree(domain, cliques, max_cells)
        layout = table_layout(domain, tuple(cliques))

        def flat_pass(flat):  # the clique tables exist only inside the program
            margs, log_z = marginals_and_log_z(jt, cliques, layout.unflatten(flat))
            return concat_tables(margs), log_z

        # a nested jit: the E-step's programs call it 3-4 times with the same shapes, and
        # it is traced once (first-call time: docs/cgm_em.md)
        passes = jax.jit(flat_pass)
        return lambda flat: (*passes(flat), jnp.asarray(True))

    def warm_start(self, domain, cliques) -> tuple:
        return ()


class Schedule(NamedTuple):
    """Loopy BP's damping, tolerance and iteration cap; ``adaptive``: start at ``damping``
    and raise it where messages oscillate (:func:`.loopy_bp.loopy_bp_flat`)."""

    damping: float
    tol: float
    max_iters: int
    adaptive: bool = False


@dataclasses.dataclass(frozen=True)
class LoopyBP:
    """Damped loopy BP, the Bethe approximation (:mod:`.loopy_bp`).

    ``damping``, ``tol``, ``max_iters``: those of :meth:`marginals` and
    :meth:`log_partition` (:func:`.loopy_bp.loopy_bp`). ``repeated``: the schedule of
    :meth:`program`, whose every call starts from the messages the last one ended with
    (CGM-EM's E-step: a few sweeps each, so a looser tolerance and cap).
    """

    damping: float = 0.5
    tol: float = 1e-10
    max_iters: int = 1000
    repeated: Schedule = Schedule(0.5, 1e-9, 500)

    name: ClassVar[str] = "loopy_bp"
    exact: ClassVar[bool] = False
    _counting: ClassVar[str] = "bethe"

    def counting_numbers(self, domain, cliques):
        return None

    def _run(self, model):
        return loopy_bp(
            model.domain,
            model.cliques,
            model.log_potentials,
            damping=self.damping,
            tol=self.tol,
            max_iters=self.max_iters,
            counting=self._counting,
        )

    def marginals(self, model) -> tuple:
        margs = self._run(model).factor_marginals
        return margs if any_traced(model.log_potentials) else tuple(map(np.asarray, margs))

    def log_partition(self, model):
        return self._run(model).log_z

    def program(self, domain, cliques, max_cells=DEFAULT_MAX_CELLS) -> Callable:
        """The stacked BP reads the flat vector as is, so the compiled program does not grow
        with the number of cliques."""
        graph = factor_graph(domain, cliques)
        rho = self.counting_numbers(domain, cliques)
        damping, tol, iters, adaptive = self.repeated

        def run(flat, init=None):  # also the messages: a warm start for the next call
            res = loopy_bp_flat(graph, damping, tol, iters, flat, init, rho, adaptive)
            return res.marginals, res.log_z, res.converged, res.messages

        return run

    def warm_start(self, domain, cliques) -> tuple:
        return (uniform_messages(factor_graph(domain, cliques)),)


@dataclasses.dataclass(frozen=True)
class TRW(LoopyBP):
    """Tree-reweighted BP (:mod:`.counting`): convex, a unique fixed point and an upper
    bound on ``log Z``. Its repeated program starts undamped and damps only where messages
    oscillate (``Schedule.adaptive``)."""

    repeated: Schedule = Schedule(0.0, 1e-9, 500, adaptive=True)

    name: ClassVar[str] = "trw_bp"
    _counting: ClassVar[str] = "trw"

    def counting_numbers(self, domain, cliques):
        return trw_counting_numbers(domain, tuple(cliques))


_REGISTRY: dict[str, Callable[..., Backend]] = {
    "junction_tree": JunctionTreeBackend,
    "loopy_bp": LoopyBP,
    "trw_bp": TRW,
}
_PLUGINS_READ = False
_CHECKED: set[type] = set()  # classes whose instances passed the Backend protocol check


def register_backend(name: str, factory: Callable[..., Backend], *, replace: bool = False):
    """Register ``factory(**options) -> Backend`` (usually the class) under ``name``."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"a backend name must be an identifier, got {name!r}")
    if name in _REGISTRY and not replace:
        raise ValueError(f"a backend named {name!r} is registered")
    _REGISTRY[name] = factory
    return factory


def unregister_backend(name: str) -> None:
    """Remove a backend (e.g. a test's toy backend)."""
    _REGISTRY.pop(name, None)


def _read_plugins() -> None:
    global _PLUGINS_READ
    if not _PLUGINS_READ:
        _PLUGINS_READ = True
        from ..plugins import load_plugins  # a broken plugin warns, as for learners

        for name, factory in load_plugins(ENTRY_POINT_GROUP).items():
            _REGISTRY.setdefault(name, factory)


def available_backends() -> tuple[str, ...]:
    """The registered names (with the installed plugins')."""
    _read_plugins()
    return tuple(_REGISTRY)


def get_backend(method: str | Backend = "junction_tree", **options) -> Backend:
    """The backend ``method`` names (built with ``options``), or ``method`` itself (with
    ``options`` replaced); a ``ValueError`` for an unknown name, option or object."""
    if isinstance(method, str):
        if method not in _REGISTRY:
            _read_plugins()
        if method not in _REGISTRY:
            raise ValueError(f"unknown inference method {method!r}; use one of {tuple(_REGISTRY)}")
        factory = _REGISTRY[method]
        try:
            backend = factory(**options)
        except TypeError as err:
            raise ValueError(f"inference method {method!r}: {err}") from None
    else:
        backend = _replaced(method, options)
    try:
        hash(backend)  # compiled programs are cached per backend
    except TypeError:
        raise ValueError(f"an inference backend must be hashable (frozen): {backend!r}") from None
    if type(backend) not in _CHECKED:  # a protocol check costs tens of microseconds
        if not isinstance(backend, Backend):
            raise ValueError(f"not an inference backend: {backend!r} (see {__name__})")
        _CHECKED.add(type(backend))
    return backend


def _replaced(backend, options: dict):
    if not options:
        return backend
    if not dataclasses.is_dataclass(backend):
        raise ValueError(f"options {sorted(options)} given for a backend that takes none")
    try:
        return dataclasses.replace(backend, **options)
    except (TypeError, ValueError) as err:
        raise ValueError(f"inference backend {backend!r}: {err}") from None
