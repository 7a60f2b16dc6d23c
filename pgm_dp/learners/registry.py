"""The learner registry: name → :class:`LearnerSpec`, what ``compare``, ``fig2``, the plots
and the CLI dispatch through.

Adding a learner is one module (a class following :class:`~pgm_dp.learners.ReleaseLearner`
or :class:`~pgm_dp.learners.RecordLearner`) plus one :func:`register` call:

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

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..models.mrf import MarkovRandomField
from .base import Fit

if TYPE_CHECKING:
    from ..privacy import Budget

__all__ = [
    "LearnerSpec",
    "available",
    "get",
    "labels",
    "make",
    "register",
    "unregister",
]

Kind = Literal["release", "records"]


def _pure_dp(epsilon: float, n: int) -> Budget:
    from ..privacy import PureDP

    return PureDP(epsilon)


@dataclass(frozen=True)
class LearnerSpec:
    """How to build, run and show one learner.

    ``factory(**options)`` returns the learner (usually its class). ``kind``: ``"release"``
    (``fit(release, mrf)``) or ``"records"`` (``fit(data, mrf, *, budget, rng,
    accountant)``). ``label``: its name in tables and plots; ``description``: one line.
    ``budget(epsilon, N)``: the budget a comparison at ``epsilon`` gives it — for a release
    learner the release's budget (default pure ``epsilon``-DP, Bernstein et al. 2017), for a
    record learner its own; ``None`` marks a non-private reference, fitted once per data
    set. ``columns``: the table columns the learner fills (default its name) and
    ``outputs(fit)`` the model of each (default ``{name: fit.model}``; a learner that
    reports several models from one run, like mbi at several iteration counts, maps each).
    """

    name: str
    factory: Callable[..., Any]
    kind: Kind
    label: str
    description: str
    budget: Callable[[float, int], Budget] | None = _pure_dp
    columns: Mapping[str, str] = field(default_factory=dict)
    outputs: Callable[[Fit], Mapping[str, MarkovRandomField]] | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("release", "records"):
            raise ValueError(f"kind must be 'release' or 'records', got {self.kind!r}")
        if not self.name or not self.name.isidentifier():
            raise ValueError(f"a learner name must be an identifier, got {self.name!r}")
        if not self.columns:
            object.__setattr__(self, "columns", {self.name: self.label})

    @property
    def private(self) -> bool:
        """Whether the learner spends a budget (``False``: a non-private reference)."""
        return self.budget is not None

    def make(self, **options) -> Any:
        """A new learner with ``options`` as hyper-parameters."""
        return self.factory(**options)

    def models(self, fit: Fit) -> Mapping[str, MarkovRandomField]:
        """``{column: model}`` of a fit of this learner."""
        return {self.name: fit.model} if self.outputs is None else self.outputs(fit)


_REGISTRY: dict[str, LearnerSpec] = {}


def register(spec: LearnerSpec, *, replace: bool = False) -> LearnerSpec:
    """Add ``spec`` (refused if its name or a column is taken, unless ``replace``)."""
    if not isinstance(spec, LearnerSpec):
        raise TypeError(f"register takes a LearnerSpec, got {type(spec).__name__}")
    taken = {c for name, s in _REGISTRY.items() if name != spec.name for c in s.columns}
    if (spec.name in _REGISTRY and not replace) or taken & set(spec.columns):
        raise ValueError(f"a learner named {spec.name!r} (or one of its columns) is registered")
    _REGISTRY[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """Remove a learner (e.g. a test's toy learner)."""
    _REGISTRY.pop(name, None)


def get(name: str) -> LearnerSpec:
    """The spec registered under ``name``; a ``ValueError`` listing the names otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown learner {name!r}; choose from {available()}") from None


def available(kind: Kind | None = None) -> tuple[str, ...]:
    """Registered names in registration order (of one ``kind`` if given)."""
    return tuple(n for n, s in _REGISTRY.items() if kind is None or s.kind == kind)


def make(name: str, **options) -> Any:
    """A new learner of the registered ``name`` with ``options``."""
    return get(name).make(**options)


def labels() -> dict[str, str]:
    """Display label of every registered column (learner names and their extra columns)."""
    return {c: label for s in _REGISTRY.values() for c, label in s.columns.items()}
