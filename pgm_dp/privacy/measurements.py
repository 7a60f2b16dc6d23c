"""The one measurement type: noisy clique tables in one flat layout, with their noise.

A :class:`Measurements` value is what the privacy layer releases. Its model is Private-PGM's
``LinearMeasurement`` (mbi 2.0: a frozen dataclass registered as a pytree, the noisy vector
its data, the clique and noise its static fields), held for all measurements at once: the
cliques measured, their noisy values as one flat vector ``y`` in the flat table layout
(:mod:`pgm_dp.tables`: clique ``i``'s cells in C order from ``offsets[i]``), per cell the
noise ``scale`` and ``variance``, per measurement the noise ``kinds`` and ``scales``, the total
``N`` and the budget spent. Every array is a declared field, set once by the constructor; the
layout (``offsets``, :attr:`~Measurements.layout`) and the Laplace mask (``laplace``) are NumPy,
derived from the static fields alone. Per-clique tables (``noisy[clique]``, read-only) and
noise models (``noise[clique]``, :class:`~pgm_dp.privacy.noise.NoiseModel`) are views of the
flat arrays, derived when first read (they need concrete arrays). A clique may be measured
more than once (AIM): each measurement is kept on its own, in the order measured, and the
views of a repeated clique are the inverse-variance merge of its measurements
(:meth:`Measurements.merged`), so every reader of one table per clique reads the same as from
the merged value. Frozen; a JAX pytree once JAX is loaded (data: ``y``, ``scale``,
``variance``, ``scales``; static: everything else), so a release can be an argument of a
compiled program, and a traced value keeps every field.

:meth:`Measurements.in_order` is the one check of a release against a model (its domain and
cliques, a positive ``N``) and gives the release in the model's clique order, computed when
asked, with no cache: the learners that read a release cell by cell (CGM-EM, the Bayesian
model) call it once per fit. :func:`flat_release` is the same for a release alone.

>>> import numpy as np
>>> from pgm_dp import Domain
>>> from pgm_dp.privacy import PureDP, release_marginals
>>> dom = Domain(["A", "B"], [2, 3])
>>> data = np.array([[0, 1], [1, 2], [0, 0]])
>>> rel = release_marginals(data, [("A",), ("A", "B")], dom, budget=PureDP(1.0), rng=0)
>>> view = rel.in_order([("A", "B"), ("A",)], dom)
>>> view.offsets.tolist(), view.scale.tolist()
([0, 6, 8], [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0])
>>> bool(view.laplace.all()), rel.in_order(rel.cliques) is rel
(True, True)
>>> both = rel.append(rel)  # the same cliques measured twice: kept apart, views merged
>>> both.cliques == rel.cliques * 2, both.merged().cliques == rel.cliques
(True, True)
>>> both.noise[("A",)].variance == rel.noise[("A",)].variance / 2
True
"""

from __future__ import annotations

import functools
import json
import math
import sys
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, NamedTuple

import numpy as np

from ..domain import Clique, Domain
from ..errors import DataValidationError, DomainError, reading
from ..tables import TableLayout, table_layout
from .budget import ZCDP, ApproxDP, Budget, PureDP, compose
from .noise import NoiseModel

__all__ = ["Measurements", "ReleaseArrays", "flat_release"]

_DTYPES = {"int64": np.int64, "float64": np.float64}


class ReleaseArrays(NamedTuple):
    """The arrays of a :class:`Measurements` value, its pytree's data fields
    (:attr:`Measurements.arrays`): ``y``, ``scale``, ``variance`` per cell and ``scales``
    per measurement, without the static fields (domain, cliques, kinds, provenance), so a
    compiled program that takes them is keyed by their shapes alone (not by the budget)."""

    y: Any
    scale: Any
    variance: Any
    scales: Any


#: The pytree's data fields (arrays); every other field is static.
_DATA = ReleaseArrays._fields


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


@dataclass(frozen=True, eq=False)
class Measurements:
    """Noisy clique tables and how they were made; contains no raw data.

    Built by :meth:`from_tables` (per-clique tables and noise models) or, field by field,
    from the flat arrays of another value (:meth:`in_order`, JAX's unflattening). Fields:
    ``domain`` and ``cliques`` (in the order measured; a clique may repeat); ``y``, ``scale``,
    ``variance``: the noisy values and their noise per cell (float64, read-only); ``scales``,
    ``kinds``, ``dtypes``: per measurement its noise scale and kind and the dtype it was
    given in (``int64`` for the discrete mechanisms, else ``float64``); ``budget``: the total
    cost charged; ``sensitivity``: the L1 (Laplace kinds) or L2 (Gaussian kinds) sensitivity
    of the stacked tables; ``total``: the ``N`` used, with ``total_source`` in ``{"public",
    "given", "estimate", "private"}`` and ``total_noise`` set when ``N`` is a noisy count.
    """

    domain: Domain
    cliques: tuple[Clique, ...]
    y: np.ndarray
    scale: np.ndarray
    variance: np.ndarray
    scales: np.ndarray
    kinds: tuple[str, ...]
    dtypes: tuple[str, ...]
    budget: Budget
    mechanism: str
    sensitivity: float
    total: float
    total_source: str
    total_noise: NoiseModel | None = None
    neighbouring: str = "add_remove"

    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def from_tables(
        cls, domain: Domain, cliques: Sequence[Clique], noisy: Any, noise: Any, **provenance: Any
    ) -> Measurements:
        """The measurements of ``cliques`` from their tables: ``noisy`` (``{clique: array}``,
        float64, or int64 for the discrete mechanisms) and ``noise`` (``{clique:
        NoiseModel}``), or, when ``cliques`` repeats a clique, sequences with one table and
        one noise model per entry of ``cliques``. ``provenance``: the other fields
        (``budget``, ``mechanism``, ``sensitivity``, ``total``, ``total_source``, and
        optionally ``total_noise``, ``neighbouring``)."""
        cliques = tuple(tuple(c) for c in cliques)
        tables = [np.asarray(t) for t in _per_measurement(noisy, cliques)]
        models = list(_per_measurement(noise, cliques))
        for c, t in zip(cliques, tables, strict=True):
            if t.shape != domain.sizes(c):
                raise DataValidationError(
                    f"the table of {c} has shape {t.shape}, not {domain.sizes(c)}"
                )
        sizes = [t.size for t in tables]
        y = np.concatenate([t.ravel() for t in tables] or [np.zeros(0)]).astype(np.float64)
        return cls(
            domain=domain,
            cliques=cliques,
            y=_read_only(y),
            scale=_read_only(np.repeat([m.scale for m in models], sizes).astype(np.float64)),
            variance=_read_only(np.repeat([m.variance for m in models], sizes).astype(np.float64)),
            scales=_read_only(np.array([m.scale for m in models], dtype=np.float64)),
            kinds=tuple(m.kind for m in models),
            dtypes=tuple(t.dtype.name for t in tables),
            **provenance,
        )

    @property
    def layout(self) -> TableLayout:
        """The :class:`~pgm_dp.tables.TableLayout` of the cliques (one table per entry)."""
        return table_layout(self.domain, self.cliques)

    @property
    def offsets(self) -> np.ndarray:
        """Where each measurement's cells start in ``y``, and the number of cells last."""
        return self.layout.offsets

    @property
    def laplace(self) -> np.ndarray:
        """Per cell, whether its noise is of a Laplace kind (NumPy, from ``kinds``)."""
        return self.layout.per_cell([k.endswith("laplace") for k in self.kinds]).astype(bool)

    @property
    def arrays(self) -> ReleaseArrays:
        """The flat arrays themselves (not copies): the pytree's data fields."""
        return ReleaseArrays(*(getattr(self, f) for f in _DATA))

    @property
    def total_is_public(self) -> bool:
        """Whether ``total`` was used without noise (public or user-given ``N``)."""
        return self.total_source in ("public", "given")

    @property
    def repeated(self) -> bool:
        """Whether a clique was measured more than once."""
        return len(set(self.cliques)) < len(self.cliques)

    @functools.cached_property
    def noisy(self) -> Mapping[Clique, np.ndarray]:
        """``{clique: table}``: a read-only view of ``y`` (or the int64 table it was for a
        discrete mechanism); a repeated clique's measurements merged (:func:`_merge`)."""
        return {c: t for c, (t, _) in self._views.items()}

    @functools.cached_property
    def noise(self) -> Mapping[Clique, NoiseModel]:
        """``{clique: NoiseModel}``; a repeated clique's measurements merged."""
        return {c: m for c, (_, m) in self._views.items()}

    @functools.cached_property
    def _views(self) -> dict[Clique, tuple[np.ndarray, NoiseModel]]:
        groups: dict[Clique, tuple[list, list]] = {}
        for c, t, m in zip(self.cliques, self._typed_tables(), self.noise_models(), strict=True):
            tables, models = groups.setdefault(c, ([], []))
            tables.append(t)
            models.append(m)
        return {c: _merge(*g) for c, g in groups.items()}

    def tables(self) -> list[np.ndarray]:
        """``y`` as one float64 table per measurement (read-only views)."""
        return self.layout.unflatten(self.y)

    def noise_models(self) -> list[NoiseModel]:
        """One noise model per measurement (per entry of ``cliques``)."""
        return [NoiseModel(k, float(s)) for k, s in zip(self.kinds, self.scales, strict=True)]

    def in_order(
        self, cliques: Sequence[Clique] | None = None, domain: Domain | None = None
    ) -> Measurements:
        """This release checked against a model and given in its clique order: the one
        check of a release against a model. ``cliques``: the model's (default the
        release's own order), which must be the release's in any order; ``domain``: the
        model's, which must be the release's; ``N`` must be finite and positive. A
        :class:`~pgm_dp.errors.DomainError` otherwise. A repeated clique is merged first
        (:meth:`merged`); ``self`` when nothing repeats and the order is its own, else a
        new value with the same flat arrays permuted (nothing is cached)."""
        if domain is not None and domain != self.domain:
            raise DomainError(f"release domain {self.domain} differs from the model's {domain}")
        release = self.merged()
        order = release.cliques if cliques is None else tuple(tuple(c) for c in cliques)
        if len(set(order)) != len(order) or set(order) != set(release.cliques):
            only_release = sorted(set(release.cliques) - set(order), key=str)
            only_model = sorted(set(order) - set(release.cliques), key=str)
            raise DomainError(
                "release cliques do not match the model's cliques (each once, in any order): "
                f"only in release {only_release}, only in model {only_model}"
            )
        if not np.isfinite(release.total) or release.total <= 0:
            raise DomainError(f"release total N must be positive, got {release.total}")
        return release if order == release.cliques else release._permuted(order)

    def _permuted(self, order: tuple[Clique, ...]) -> Measurements:
        """The same measurements (one per clique) in the clique order ``order``."""
        index = [self.cliques.index(c) for c in order]
        cells = np.concatenate(
            [np.arange(self.offsets[i], self.offsets[i + 1]) for i in index] or [[]]
        ).astype(np.int64)
        return _replace_fields(
            self,
            cliques=order,
            **{f: _read_only(getattr(self, f)[cells]) for f in ("y", "scale", "variance")},
            scales=_read_only(self.scales[index]),
            kinds=tuple(self.kinds[i] for i in index),
            dtypes=tuple(self.dtypes[i] for i in index),
        )

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
        return self.with_tables(self.noisy, cliques=tuple(dict.fromkeys(self.cliques)), **changes)

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
        both = self.with_tables(
            [*self._typed_tables(), *other._typed_tables()],
            self.noise_models() + other.noise_models(),
            cliques=self.cliques + other.cliques,
            **{**default, "total": 1.0, **changes},
        )
        if "total" in changes:
            return both
        return _replace_fields(both, total=both.estimated_total())

    def _typed_tables(self) -> list[np.ndarray]:
        """One table per measurement in the dtype it was given (int64 or float64)."""
        return [
            t if dt == "float64" else _read_only(t.astype(_DTYPES.get(dt, dt)))
            for t, dt in zip(self.tables(), self.dtypes, strict=True)
        ]

    def with_tables(self, noisy: Any, noise: Any = None, **changes: Any) -> Measurements:
        """Other tables with this release's provenance: :meth:`from_tables` of ``noisy``
        and ``noise`` (default this release's per-clique noise models) on this release's
        domain and cliques; ``changes`` replace any of those or of the other fields
        (``domain``, ``cliques``, ``budget``, ``total``, ...)."""
        fixed = {f: getattr(self, f) for f in ("domain", "cliques", *_PROVENANCE)} | changes
        domain, cliques = fixed.pop("domain"), fixed.pop("cliques")
        noise = self.noise if noise is None else noise
        return Measurements.from_tables(domain, cliques, noisy, noise, **fixed)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Measurements):
            return NotImplemented
        same = all(getattr(self, f) == getattr(other, f) for f in _STATIC)
        return same and all(np.array_equal(getattr(self, f), getattr(other, f)) for f in _DATA)

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
        return cls.from_tables(
            dom,
            cliques,
            noisy,
            noise,
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


def _replace_fields(m: Measurements, **changes: Any) -> Measurements:
    """``m`` with some of its fields replaced (the arrays as they are given)."""
    return Measurements(**{f.name: getattr(m, f.name) for f in fields(m)} | changes)


def flat_release(release: Measurements, cliques: Sequence[Clique] | None = None) -> Measurements:
    """:meth:`Measurements.in_order` of ``release`` (the cliques checked, not the domain)."""
    return release.in_order(cliques)


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
_STATIC = tuple(f.name for f in fields(Measurements) if f.name not in _DATA)
_PROVENANCE = tuple(f for f in _STATIC if f not in ("domain", "cliques", "kinds", "dtypes"))
_REGISTERED: list[bool] = []


def register_pytree() -> None:
    """Register :class:`Measurements` with ``jax.tree_util`` as a dataclass (data: the flat
    arrays; static: the other fields), once; called when this module is imported after
    JAX, and by :mod:`pgm_dp._config`, imported with every module that uses JAX."""
    if _REGISTERED or "jax" not in sys.modules:
        return
    import jax

    jax.tree_util.register_dataclass(
        Measurements, data_fields=list(_DATA), meta_fields=list(_STATIC)
    )
    _REGISTERED.append(True)


register_pytree()
