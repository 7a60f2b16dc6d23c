"""The one measurement type: noisy clique tables in one flat layout, with their noise.

A :class:`Measurements` value is what the privacy layer releases (Private-PGM's list of
``LinearMeasurement`` is the model): the cliques measured, their noisy values as one flat
vector ``y`` in the flat table layout (:mod:`pgm_dp.models.tables`: clique ``i``'s cells
in C order from ``offsets[i]``), per clique the noise ``kinds`` and ``scales``, per cell
the noise ``scale``, ``variance`` and whether it is of a Laplace kind (``laplace``), the
total ``N`` and the budget spent. Per-clique tables (``noisy[clique]``, read-only) and noise
models (``noise[clique]``, :class:`~pgm_dp.privacy.noise.NoiseModel`) are views derived from
the flat arrays. A clique may be measured more than once (AIM): each measurement is kept on
its own, in the order measured, and the views of a repeated clique are the inverse-variance
merge of its measurements (:meth:`Measurements.merged`), so every reader of one table per
clique reads the same as from the merged value. Frozen; a JAX pytree once JAX is loaded
(leaves: the flat arrays; static: everything else), so a release can be an argument of a
compiled program.

:func:`flat_release` gives the same release in another clique order (the order of a model's
cliques), computed when asked, with no cache: the learners that read a release cell by cell
(CGM-EM, the Bayesian model) call it once per fit.

>>> import numpy as np
>>> from pgm_dp import Domain
>>> from pgm_dp.privacy import PureDP, release_marginals
>>> dom = Domain(["A", "B"], [2, 3])
>>> data = np.array([[0, 1], [1, 2], [0, 0]])
>>> rel = release_marginals(data, [("A",), ("A", "B")], dom, budget=PureDP(1.0), rng=0)
>>> view = flat_release(rel)
>>> view.offsets.tolist(), view.scale.tolist()
([0, 2, 8], [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0])
>>> bool(view.laplace.all()), flat_release(rel) is rel
(True, True)
>>> both = rel.append(rel)  # the same cliques measured twice: kept apart, views merged
>>> both.cliques == rel.cliques * 2, both.merged().cliques == rel.cliques
(True, True)
>>> both.noise[("A",)].variance == rel.noise[("A",)].variance / 2
True
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..domain import Clique, Domain
from ..errors import DataValidationError, DomainError, reading
from .budget import ZCDP, ApproxDP, Budget, PureDP, compose
from .noise import NoiseModel

__all__ = ["Measurements", "flat_release"]

_FLAT = ("y", "scale", "variance", "laplace", "scales")
_DTYPES = {"int64": np.int64, "float64": np.float64}


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


@dataclass(frozen=True, eq=False)
class Measurements:
    """Noisy clique tables and how they were made; contains no raw data.

    Built from per-clique tables (``noisy``: ``{clique: array}``, float64 or int64 for the
    discrete mechanisms; ``noise``: ``{clique: NoiseModel}``), or, when ``cliques`` repeats a
    clique, from sequences with one table and one noise model per entry of ``cliques``;
    stored flat (module docstring). ``budget``: the total cost charged; ``sensitivity``:
    the L1 (Laplace kinds) or L2 (Gaussian kinds) sensitivity of the stacked tables;
    ``total``: the ``N`` used, with ``total_source`` in ``{"public", "given", "estimate",
    "private"}`` and ``total_noise`` set when ``N`` is a noisy count.
    """

    domain: Domain
    cliques: tuple[Clique, ...]
    noisy: Mapping[Clique, np.ndarray]
    noise: Mapping[Clique, NoiseModel]
    budget: Budget
    mechanism: str
    sensitivity: float
    total: float
    total_source: str
    total_noise: NoiseModel | None = None
    neighbouring: str = "add_remove"
    dtypes: tuple[str, ...] = field(init=False, repr=False)
    kinds: tuple[str, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        cliques = tuple(self.cliques)
        tables = [np.asarray(t) for t in _per_measurement(self.noisy, cliques)]
        models = list(_per_measurement(self.noise, cliques))
        sizes = [t.size for t in tables]
        flat = {
            "y": np.concatenate([t.ravel() for t in tables] or [np.zeros(0)]).astype(np.float64),
            "scale": np.repeat([m.scale for m in models], sizes).astype(np.float64),
            "variance": np.repeat([m.variance for m in models], sizes).astype(np.float64),
            "laplace": np.repeat([m.is_laplace for m in models], sizes).astype(bool),
            "scales": np.array([m.scale for m in models], dtype=np.float64),
        }
        set_ = object.__setattr__
        set_(self, "cliques", cliques)
        set_(self, "dtypes", tuple(t.dtype.name for t in tables))
        set_(self, "kinds", tuple(m.kind for m in models))
        for name, a in flat.items():
            set_(self, name, _read_only(a))
        set_(self, "offsets", np.cumsum([0, *sizes]))
        _set_views(self, [t.shape for t in tables])

    __hash__ = None  # type: ignore[assignment]

    @property
    def total_is_public(self) -> bool:
        """Whether ``total`` was used without noise (public or user-given ``N``)."""
        return self.total_source in ("public", "given")

    @property
    def layout(self):
        """The :class:`~pgm_dp.models.tables.TableLayout` of the cliques (imports JAX)."""
        from ..models.tables import table_layout

        return table_layout(self.domain, self.cliques)

    def tables(self) -> list[np.ndarray]:
        """``y`` as one float64 table per clique (read-only views)."""
        return [
            self.y[a:b].reshape(self.domain.sizes(c))
            for c, a, b in zip(self.cliques, self.offsets[:-1], self.offsets[1:], strict=True)
        ]

    @property
    def repeated(self) -> bool:
        """Whether a clique was measured more than once."""
        return len(set(self.cliques)) < len(self.cliques)

    def noise_models(self) -> list[NoiseModel]:
        """One noise model per measurement (per entry of ``cliques``)."""
        return [NoiseModel(k, float(s)) for k, s in zip(self.kinds, self.scales, strict=True)]

    def estimated_total(self) -> float:
        """Inverse-variance weighted mean of the measurements' sums (at least 1): ``N``
        estimated from the noisy tables alone (post-processing)."""
        tables, models = self.tables(), self.noise_models()
        sums = np.array([float(np.sum(t)) for t in tables])
        var = np.array(
            [t.size * max(m.variance, 1e-300) for t, m in zip(tables, models, strict=True)]
        )
        return max(float(np.sum(sums / var) / np.sum(1 / var)), 1.0)

    def merged(self, **changes: Any) -> Measurements:
        """One measurement per clique, in the order first measured: the views (a repeated
        clique's inverse-variance merge, :func:`_merge`). ``changes`` replace the other fields
        (``budget``, ``total``, ...). ``self`` when nothing repeats and nothing changes."""
        if not self.repeated and not changes:
            return self
        return self._replace(tuple(dict.fromkeys(self.cliques)), self.noisy, self.noise, changes)

    def append(self, other: Measurements, **changes: Any) -> Measurements:
        """A new value: ``self``'s measurements, then ``other``'s (repeats kept apart), on
        ``self``'s domain. By default the budgets compose
        (:func:`~pgm_dp.privacy.budget.compose`), the sensitivity is the larger (each part
        was measured on its own), the mechanisms join with ``"+"`` when they differ, and
        ``N`` is :meth:`estimated_total` of the whole; ``changes`` replace any field."""
        if not isinstance(other, Measurements):
            raise DataValidationError(f"can only append Measurements, got {type(other).__name__}")
        default = dict(
            budget=compose(self.budget, other.budget),
            mechanism="+".join(dict.fromkeys((self.mechanism, other.mechanism))),
            sensitivity=max(self.sensitivity, other.sensitivity),
            total_source="estimate",
            total_noise=None,
        )
        both = self._replace(
            self.cliques + other.cliques,
            [*self._typed_tables(), *other._typed_tables()],
            self.noise_models() + other.noise_models(),
            {**default, "total": 1.0, **changes},
        )
        if "total" in changes:
            return both
        tables, models = both._typed_tables(), both.noise_models()
        return both._replace(both.cliques, tables, models, {"total": both.estimated_total()})

    def _typed_tables(self) -> list[np.ndarray]:
        """One table per measurement in the dtype it was given (int64 or float64)."""
        return [
            t if dt == "float64" else _read_only(t.astype(_DTYPES.get(dt, dt)))
            for t, dt in zip(self.tables(), self.dtypes, strict=True)
        ]

    def _replace(self, cliques, noisy, noise, changes: Mapping[str, Any]) -> Measurements:
        fields = {f: getattr(self, f) for f in _INIT}
        new = {"cliques": cliques, "noisy": noisy, "noise": noise, **changes}
        return Measurements(**{**fields, **new})

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Measurements):
            return NotImplemented
        same = all(
            getattr(self, f) == getattr(other, f)
            for f in self.__dataclass_fields__
            if f not in ("noisy", "noise")
        )
        return (
            same and np.array_equal(self.y, other.y) and np.array_equal(self.scales, other.scales)
        )

    def to_json(self) -> str:
        """JSON text (exact float round trip via ``repr``); see :meth:`from_json`."""
        doc = {
            "format": "pgm_dp.NoisyMarginals",
            "version": 1,
            "domain": {
                "attributes": [_jsonable_name(a) for a in self.domain.attributes],
                **self.domain.to_json_dict(),
            },
            "cliques": [list(c) for c in self.cliques],
            "noisy": [t.tolist() for t in self._typed_tables()],
            "dtype": list(self.dtypes),
            "noise": [m.to_dict() for m in self.noise_models()],
            "budget": _budget_to_dict(self.budget),
            "mechanism": self.mechanism,
            "sensitivity": self.sensitivity,
            "total": self.total,
            "total_source": self.total_source,
            "total_noise": None if self.total_noise is None else self.total_noise.to_dict(),
            "neighbouring": self.neighbouring,
        }
        return json.dumps(doc, allow_nan=False)

    @classmethod
    def from_json(cls, text: str) -> Measurements:
        """Inverse of :meth:`to_json` (and the files of every earlier version). The tables'
        dtypes must be ``int64`` or ``float64`` (what :meth:`to_json` writes); others are
        refused before any table is built. Anything malformed (wrong types, numbers too large
        for their table, NaN or inf in a table or the total) raises
        :class:`~pgm_dp.errors.DataValidationError`."""
        with reading("release (pgm_dp.NoisyMarginals JSON)"):
            return cls._from_doc(json.loads(text))

    @classmethod
    def _from_doc(cls, d: Any) -> Measurements:
        if not isinstance(d, dict) or d.get("format") != "pgm_dp.NoisyMarginals":
            raise DataValidationError("not a pgm_dp.NoisyMarginals JSON document")
        dom = Domain.from_json_dict(d["domain"])
        cliques = tuple(tuple(c) for c in d["cliques"])
        for dt in d["dtype"]:
            if not isinstance(dt, str) or dt not in _DTYPES:
                raise DataValidationError(f"release tables must be int64 or float64: {dt!r:.40}")
        noisy = [
            np.array(v, dtype=_DTYPES[dt]).reshape(dom.sizes(c))
            for c, v, dt in zip(cliques, d["noisy"], d["dtype"], strict=True)
        ]
        if not all(np.isfinite(t).all() for t in noisy) or not math.isfinite(float(d["total"])):
            raise DataValidationError("a release's noisy tables and total must be finite")
        noise = [NoiseModel(**m) for m in d["noise"]]
        tn = d["total_noise"]
        return cls(
            domain=dom,
            cliques=cliques,
            noisy=noisy,
            noise=noise,
            budget=_budget_from_dict(d["budget"]),
            mechanism=d["mechanism"],
            sensitivity=float(d["sensitivity"]),
            total=float(d["total"]),
            total_source=d["total_source"],
            total_noise=None if tn is None else NoiseModel(**tn),
            neighbouring=d["neighbouring"],
        )


def _per_measurement(given: Any, cliques: tuple[Clique, ...]) -> list:
    """One item per entry of ``cliques``: from a sequence in that order, or a mapping by
    clique (which cannot hold a repeated clique's measurements apart)."""
    if isinstance(given, Mapping):
        if len(set(cliques)) < len(cliques):
            raise DataValidationError(
                "a repeated clique needs one table and one noise model per measurement "
                "(sequences in the order of cliques), not a mapping"
            )
        return [given[c] for c in cliques]
    given = list(given)
    if len(given) != len(cliques):
        raise DataValidationError(f"{len(cliques)} cliques but {len(given)} tables or models")
    return given


def _merge(tables: list[np.ndarray], models: list[NoiseModel]) -> tuple[np.ndarray, NoiseModel]:
    """One clique's measurements as one: the inverse-variance weighted mean of the tables (a
    sufficient statistic of Gaussian measurements; for Laplace ones the best linear unbiased
    combination), with variance ``1 / sum(1 / v_i)`` as a Gaussian (or Laplace) noise model
    of that variance. A single measurement is returned as it is."""
    if len(tables) == 1:
        return tables[0], models[0]
    weights = [1 / m.variance for m in models]
    tables = [np.asarray(t, dtype=np.float64) for t in tables]
    noisy = sum(w * t for w, t in zip(weights, tables, strict=True)) / math.fsum(weights)
    var = 1 / math.fsum(weights)
    laplace = models[0].kind.endswith("laplace")
    model = (
        NoiseModel("laplace", math.sqrt(var / 2))
        if laplace
        else NoiseModel("gaussian", math.sqrt(var))
    )
    return _read_only(noisy), model


def _set_views(m: Measurements, shapes: Sequence[tuple[int, ...]]) -> None:
    """The per-clique views of ``m``'s flat arrays: ``noisy[c]`` (a view of ``y``, or the
    int64 table it was for a discrete mechanism) and ``noise[c]``; a repeated clique's
    measurements merged (:func:`_merge`)."""
    groups: dict[Clique, tuple[list, list]] = {}
    for i, c in enumerate(m.cliques):
        part = m.y[m.offsets[i] : m.offsets[i + 1]].reshape(shapes[i])
        if m.dtypes[i] != "float64":
            part = _read_only(part.astype(_DTYPES.get(m.dtypes[i], m.dtypes[i])))
        tables, models = groups.setdefault(c, ([], []))
        tables.append(part)
        models.append(NoiseModel(m.kinds[i], float(m.scales[i])))
    merged = {c: _merge(*g) for c, g in groups.items()}
    object.__setattr__(m, "noisy", {c: t for c, (t, _) in merged.items()})
    object.__setattr__(m, "noise", {c: n for c, (_, n) in merged.items()})


def flat_release(release: Measurements, cliques: Sequence[Clique] | None = None) -> Measurements:
    """``release`` with its measurements in the order of ``cliques`` (default its own; the
    same set, else a :class:`~pgm_dp.errors.DomainError`): ``release`` itself when the order
    is its own, else a new value built from the per-clique views (nothing is cached). A
    release with a repeated clique is merged first (:meth:`Measurements.merged`)."""
    release = release.merged()
    cliques = tuple(release.cliques) if cliques is None else tuple(map(tuple, cliques))
    if cliques == release.cliques:
        return release
    if len(cliques) != len(release.cliques) or set(cliques) != set(release.cliques):
        raise DomainError("the cliques must be the release's, in any order")
    return Measurements(
        domain=release.domain,
        cliques=cliques,
        noisy=release.noisy,
        noise=release.noise,
        budget=release.budget,
        mechanism=release.mechanism,
        sensitivity=release.sensitivity,
        total=release.total,
        total_source=release.total_source,
        total_noise=release.total_noise,
        neighbouring=release.neighbouring,
    )


# -- JSON helpers ----------------------------------------------------------------------------
def _budget_to_dict(b: Budget) -> dict:
    return {"type": type(b).__name__, **{k: getattr(b, k) for k in b.__dataclass_fields__}}


def _budget_from_dict(d: Mapping) -> Budget:
    kinds = {"PureDP": PureDP, "ZCDP": ZCDP, "ApproxDP": ApproxDP}
    d = dict(d)
    return kinds[d.pop("type")](**d)


def _jsonable_name(name: Hashable) -> Hashable:
    if isinstance(name, bool) or not isinstance(name, str | int):
        raise DomainError(f"to_json needs str or int variable names, got {name!r}")
    return name


# -- JAX pytree ------------------------------------------------------------------------------
_STATIC = tuple(f for f in Measurements.__dataclass_fields__ if f not in ("noisy", "noise"))
_INIT = tuple(f for f, v in Measurements.__dataclass_fields__.items() if v.init)


def _flatten(m: Measurements) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    return tuple(getattr(m, a) for a in _FLAT), tuple(getattr(m, f) for f in _STATIC)


def _unflatten(static: tuple[Any, ...], leaves: tuple[Any, ...]) -> Measurements:
    """A value on other leaves (traced, batched): the flat arrays and the static fields;
    the per-clique views only when the leaves are NumPy arrays of the original shapes."""
    m = object.__new__(Measurements)
    for name, value in (*zip(_STATIC, static, strict=True), *zip(_FLAT, leaves, strict=True)):
        object.__setattr__(m, name, value)
    object.__setattr__(m, "offsets", np.cumsum([0, *(m.domain.size(c) for c in m.cliques)]))
    concrete = all(isinstance(a, np.ndarray) and a.ndim == 1 for a in leaves[:1])
    if concrete:
        _set_views(m, [m.domain.sizes(c) for c in m.cliques])
    else:
        object.__setattr__(m, "noisy", None)
        object.__setattr__(m, "noise", None)
    return m


_REGISTERED: list[bool] = []


def register_pytree() -> None:
    """Register :class:`Measurements` with ``jax.tree_util`` (once; called when this module
    is imported after JAX, and by :mod:`pgm_dp._config`, imported with every module that
    uses JAX)."""
    if _REGISTERED or "jax" not in sys.modules:
        return
    import jax

    jax.tree_util.register_pytree_node(Measurements, _flatten, _unflatten)
    _REGISTERED.append(True)


register_pytree()
