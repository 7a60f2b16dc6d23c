"""The learner registry: name → :class:`LearnerSpec`, the one list of learners that
``pgm-dp fit``, ``pgm-dp compare`` (:mod:`pgm_dp.compare.graphs`) and the reproductions dispatch
through.

Adding a learner is one module (a class following :class:`~pgm_dp.learners.ReleaseLearner`
or :class:`~pgm_dp.learners.RecordLearner`) plus one :func:`register` call, or, from another
package, an entry point in the group ``pgm_dp.learners`` (:data:`PLUGIN_GROUP`) whose object
is a :class:`LearnerSpec` or a function returning one; installed plugins are loaded on the
first look-up (:func:`pgm_dp.plugins.load_plugins`; a broken one warns and is skipped):

>>> from dataclasses import dataclass
>>> from pgm_dp.learners import Fit, LearnerSpec, NaiveMLE, register, unregister
>>> @dataclass(frozen=True)
... class Heavier:
...     def fit(self, release, mrf):
...         return NaiveMLE(l2=1e-2).fit(release, mrf)
>>> spec = register(LearnerSpec("heavier", Heavier, "release", "Naive MLE (l2=0.01)",
...                             "naive MLE with a stronger ridge"))
>>> make("heavier")
Heavier()
>>> unregister("heavier")
"""

from __future__ import annotations

import functools
import importlib
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..plugins import PluginWarning, load_plugins

__all__ = [
    "PLUGIN_GROUP",
    "LearnerSpec",
    "available",
    "get",
    "labels",
    "make",
    "register",
    "unregister",
]

Kind = Literal["release", "records"]
BudgetType = Literal["PureDP", "ZCDP", "ApproxDP"]
#: The budget types a :class:`LearnerSpec` may declare.
BUDGET_TYPES = ("PureDP", "ZCDP", "ApproxDP")
#: The entry-point group of third-party learners.
PLUGIN_GROUP = "pgm_dp.learners"


@dataclass(frozen=True)
class LearnerSpec:
    """How to build and show one learner.

    ``factory(**options)`` returns the learner (usually its class); it may be given as
    ``"module:attribute"`` (entry-point syntax), imported on the first :meth:`make`, so that
    a learner of a heavy module or of a layer above ``learners`` is listed without being
    imported. ``kind``: ``"release"`` (``fit(release, mrf)``) or ``"records"`` (``fit(data,
    mrf, *, budget, rng, accountant)``). ``label``: its name in tables and plots;
    ``description``: one line. ``private``: whether it spends a budget (``False``: a
    non-private reference, such as MLE on the exact tables). ``budget``: the name of the
    budget type a private learner takes (:mod:`pgm_dp.privacy.budget`; named, so that the
    registry imports nothing): ``"PureDP"`` (default; a release learner fits tables released
    under any notion), ``"ZCDP"`` or ``"ApproxDP"``. How much of it a comparison gives is the
    comparison's choice (:func:`pgm_dp.compare.graphs.budget_for`).
    """

    name: str
    factory: Callable[..., Any] | str
    kind: Kind
    label: str
    description: str
    private: bool = True
    budget: BudgetType = "PureDP"

    def __post_init__(self) -> None:
        if self.kind not in ("release", "records"):
            raise ValueError(f"kind must be 'release' or 'records', got {self.kind!r}")
        if self.budget not in BUDGET_TYPES:
            raise ValueError(f"budget must be one of {BUDGET_TYPES}, got {self.budget!r}")
        if not self.name or not self.name.isidentifier():
            raise ValueError(f"a learner name must be an identifier, got {self.name!r}")
        if isinstance(self.factory, str) and not _is_reference(self.factory):
            raise ValueError(f"a factory given as text is 'module:attribute', got {self.factory!r}")

    def make(self, **options) -> Any:
        """A new learner with ``options`` as hyper-parameters."""
        factory = self.factory
        if isinstance(factory, str):
            module, _, attribute = factory.partition(":")
            factory = functools.reduce(
                getattr, attribute.split("."), importlib.import_module(module)
            )
        return factory(**options)


def _is_reference(text: str) -> bool:
    module, _, attribute = text.partition(":")
    parts = module.split(".") + attribute.split(".")
    return all(p.isidentifier() for p in parts)


_REGISTRY: dict[str, LearnerSpec] = {}
_PLUGINS_LOADED = False


def register(spec: LearnerSpec, *, replace: bool = False) -> LearnerSpec:
    """Add ``spec`` (refused if its name is taken, unless ``replace``)."""
    if not isinstance(spec, LearnerSpec):
        raise TypeError(f"register takes a LearnerSpec, got {type(spec).__name__}")
    if spec.name in _REGISTRY and not replace:
        raise ValueError(f"a learner named {spec.name!r} is registered")
    _REGISTRY[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """Remove a learner (e.g. a test's toy learner)."""
    _REGISTRY.pop(name, None)


def get(name: str) -> LearnerSpec:
    """The spec registered under ``name``; a ``ValueError`` listing the names otherwise."""
    _load_plugins()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown learner {name!r}; choose from {list(available())}") from None


def available(kind: Kind | None = None) -> tuple[str, ...]:
    """Registered names in registration order (of one ``kind`` if given), plugins last."""
    _load_plugins()
    return tuple(n for n, s in _REGISTRY.items() if kind is None or s.kind == kind)


def make(name: str, **options) -> Any:
    """A new learner of the registered ``name`` with ``options``."""
    return get(name).make(**options)


def labels() -> dict[str, str]:
    """Display label of every registered learner."""
    _load_plugins()
    return {name: s.label for name, s in _REGISTRY.items()}


def _load_plugins() -> None:
    """Register the learners of the installed ``pgm_dp.learners`` entry points, once. An
    entry point's object is a :class:`LearnerSpec` of the same name or a function returning
    one; anything else, or a name already taken, is skipped with a ``PluginWarning``."""
    global _PLUGINS_LOADED
    if _PLUGINS_LOADED:
        return
    _PLUGINS_LOADED = True  # first: a plugin that looks the registry up while loading
    for name, obj in load_plugins(PLUGIN_GROUP).items():
        try:
            spec = obj if isinstance(obj, LearnerSpec) else obj()
            if not isinstance(spec, LearnerSpec):
                raise TypeError(f"it gives a {type(spec).__name__}, not a LearnerSpec")
            if spec.name != name:
                raise ValueError(f"its spec is named {spec.name!r}")
            if _REGISTRY.get(name) != spec:  # a plugin module may register itself
                register(spec)
        except Exception as err:  # third-party code: warn and keep the registry whole
            warnings.warn(
                f"{PLUGIN_GROUP} plugin {name!r} skipped: {err}", PluginWarning, stacklevel=3
            )
