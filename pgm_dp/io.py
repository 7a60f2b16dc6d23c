"""Saving and loading in an open format: JSON metadata and NumPy arrays, never pickle.

* a release (:class:`~pgm_dp.privacy.NoisyMarginals`): one JSON file (its ``to_json``);
* a model (:class:`~pgm_dp.MarkovRandomField`) or a learner's :class:`~pgm_dp.learners.Fit`:
  one ``.npz`` archive holding ``__meta__`` (a JSON document: format, version, domain with
  labels, cliques, history, info) and one float64 array per table. A fit's ``info`` keeps
  its privacy metadata — the ``budget`` of the release it was fitted to, or the cost
  ``spent`` by a record learner — as typed entries that load back as the same objects.

Every float is stored exactly (arrays in binary, JSON floats by ``repr``), so a round trip
gives equal tables, equal histories and equal budgets. :func:`load` reads any of the three.

Loading a file from elsewhere is safe: :func:`load` never imports or calls anything named in
the file and builds only the package's own plain value types (:data:`VALUE_TYPES`: the
budgets and :class:`~pgm_dp.privacy.NoiseModel`), with their fields checked. It bounds what a
file may allocate: every array's header (shape, dtype) is read before the array, an array
must fill exactly its declared member of the archive, object and structured dtypes are
refused, the archive may not expand beyond ``max(16 MiB, 4 x its size)`` (``save`` writes it
uncompressed), every array is read at most once and only when the metadata refers to it, a
model's tables must have its cliques' shapes, and a release's tables must be ``int64`` or
``float64``. Anything else raises :class:`~pgm_dp.errors.DataValidationError`. A file never
widens a safety limit: a model's stored ``max_cells`` (the most cells of the junction-tree
tables it may build) is clamped to the library's default (rebuild the model with a larger
``max_cells`` if you trust the file).

>>> import tempfile, pathlib
>>> from pgm_dp.models import third_order_chain
>>> mrf = third_order_chain(4, 2, rng=0)
>>> path = pathlib.Path(tempfile.mkdtemp()) / "model.npz"
>>> save(mrf, path) == path
True
>>> same = load(path)
>>> same.domain == mrf.domain and all(
...     (a == b).all() for a, b in zip(same.log_potentials, mrf.log_potentials))
True
"""

from __future__ import annotations

import dataclasses
import io as _io
import json
import math
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from .domain import Domain
from .errors import DataValidationError
from .inference.junction_tree import DEFAULT_MAX_CELLS
from .learners.base import Fit
from .models.mrf import MarkovRandomField
from .privacy import ZCDP, ApproxDP, NoiseModel, NoisyMarginals, PureDP

__all__ = ["save", "load", "save_model", "load_model", "save_fit", "load_fit", "VALUE_TYPES"]

_VERSION = 1

#: The dataclasses a saved file may hold (by ``module:name``), with their fields' JSON types.
VALUE_TYPES: dict[str, tuple[type, dict[str, str]]] = {
    "pgm_dp.privacy.budget:PureDP": (PureDP, {"epsilon": "real"}),
    "pgm_dp.privacy.budget:ZCDP": (ZCDP, {"rho": "real"}),
    "pgm_dp.privacy.budget:ApproxDP": (ApproxDP, {"epsilon": "real", "delta": "real"}),
    "pgm_dp.privacy.noise:NoiseModel": (NoiseModel, {"kind": "str", "scale": "real"}),
}

_MIN_CAP = 1 << 24  # bytes any archive may expand to
_EXPANSION = 4  # beyond that, bytes of arrays per byte of file
_KINDS = "biufcSU"  # dtype kinds an array may have: numbers, booleans, strings


def _type_name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


class _Encoder:
    """Tagged JSON for info values; arrays go to ``self.arrays``."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def array(self, value: Any) -> dict:
        key = f"a{len(self.arrays)}"
        arr = np.asarray(value)
        if arr.dtype.kind not in _KINDS or arr.dtype.fields is not None:
            raise DataValidationError(f"cannot save an array of dtype {arr.dtype}")
        self.arrays[key] = arr
        return {"__array__": key}

    def __call__(self, v: Any) -> Any:
        if isinstance(v, np.generic):
            v = v.item()
        if v is None or isinstance(v, bool | int | str):
            return v
        if isinstance(v, float):
            return v if math.isfinite(v) else {"__float__": repr(v)}
        if isinstance(v, MarkovRandomField):
            return {"__model__": self.model(v)}
        if isinstance(v, NoisyMarginals):
            return {"__release__": v.to_json()}
        if isinstance(v, Domain):
            return {"__domain__": v.to_json_dict()}
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            name = _type_name(type(v))
            if name not in VALUE_TYPES:
                raise DataValidationError(f"cannot save a value of type {name}")
            fields = {f: self(getattr(v, f)) for f in VALUE_TYPES[name][1]}
            return {"__dataclass__": name, **fields}
        if isinstance(v, dict):
            if all(isinstance(k, str) for k in v):
                return {"__dict__": {k: self(x) for k, x in v.items()}}
            return {"__items__": [[self(k), self(x)] for k, x in v.items()]}
        if isinstance(v, tuple):
            return {"__tuple__": [self(x) for x in v]}
        if isinstance(v, frozenset):
            items = [self(x) for x in v]
            return {"__frozenset__": sorted(items, key=lambda x: json.dumps(x, sort_keys=True))}
        if isinstance(v, list):
            return [self(x) for x in v]
        if hasattr(v, "shape") and hasattr(v, "dtype"):
            return self.array(v)
        raise DataValidationError(f"cannot save a value of type {type(v).__name__}")

    def model(self, mrf: MarkovRandomField) -> dict:
        return {
            "domain": mrf.domain.to_json_dict(),
            "cliques": [list(c) for c in mrf.cliques],
            "tables": [self.array(np.asarray(t, dtype=np.float64)) for t in mrf.log_potentials],
            "max_cells": mrf.max_cells,
        }


def _real(v: Any) -> bool:
    return (isinstance(v, int | float) and not isinstance(v, bool)) or (
        isinstance(v, dict) and set(v) == {"__float__"}
    )


def _value(v: dict, dec) -> Any:
    """An allow-listed dataclass from its tagged entry; anything else is refused."""
    name = v["__dataclass__"]
    if not isinstance(name, str) or name not in VALUE_TYPES:
        raise DataValidationError(
            f"refusing to load a value of type {name!r}: not one of the "
            f"types pgm_dp saves ({', '.join(VALUE_TYPES)})"
        )
    cls, fields = VALUE_TYPES[name]
    given = {k: x for k, x in v.items() if k != "__dataclass__"}
    if set(given) != set(fields):
        raise DataValidationError(f"{name} needs the fields {sorted(fields)}, got {sorted(given)}")
    for k, kind in fields.items():
        if not (_real(given[k]) if kind == "real" else isinstance(given[k], str)):
            raise DataValidationError(f"{name}.{k} must be a {kind}, got {given[k]!r:.80}")
    try:
        return cls(**{k: dec(x) for k, x in given.items()})
    except (ValueError, OverflowError) as err:
        raise DataValidationError(f"invalid {name}: {err}") from None


def _decoder(arrays: _Archive):
    def dec(v: Any) -> Any:
        if isinstance(v, list):
            return [dec(x) for x in v]
        if not isinstance(v, dict):
            return v
        if "__array__" in v:
            return arrays.take(v["__array__"])
        if "__float__" in v:
            if v["__float__"] not in ("inf", "-inf", "nan"):
                raise DataValidationError(f"bad non-finite float {v['__float__']!r:.80}")
            return float(v["__float__"])
        if "__model__" in v:
            return _model(v["__model__"], arrays)
        if "__release__" in v:
            return NoisyMarginals.from_json(v["__release__"])
        if "__domain__" in v:
            return Domain.from_json_dict(v["__domain__"])
        if "__dataclass__" in v:
            return _value(v, dec)
        if "__dict__" in v:
            return {k: dec(x) for k, x in v["__dict__"].items()}
        if "__items__" in v:
            return {_hashable(dec(k)): dec(x) for k, x in v["__items__"]}
        if "__tuple__" in v:
            return tuple(dec(x) for x in v["__tuple__"])
        if "__frozenset__" in v:
            return frozenset(_hashable(dec(x)) for x in v["__frozenset__"])
        raise DataValidationError(f"unknown entry in a saved file: {sorted(v)}")

    return dec


def _hashable(key: Any) -> Any:
    return tuple(_hashable(k) for k in key) if isinstance(key, list | tuple) else key


def _model(d: dict, arrays: _Archive) -> MarkovRandomField:
    dom = Domain.from_json_dict(d["domain"])
    cliques = [tuple(c) for c in d["cliques"]]
    if len(d["tables"]) != len(cliques):
        raise DataValidationError(f"{len(d['tables'])} tables for {len(cliques)} cliques")
    tables = []
    for c, t in zip(cliques, d["tables"], strict=True):
        key = t["__array__"]
        shape, dtype = arrays.header(key)
        if shape != dom.sizes(c) or dtype != np.float64:
            raise DataValidationError(
                f"table of {c}: {dtype}{list(shape)}, expected float64{list(dom.sizes(c))}"
            )
        tables.append(arrays.take(key))
    return MarkovRandomField(dom, cliques, tables, max_cells=_max_cells(d.get("max_cells")))


def _max_cells(stored: Any) -> int:
    """A stored model's memory limit, never wider than the library's default: a file may
    narrow a safety limit, never lift it (a larger one is clamped to the default)."""
    if isinstance(stored, bool) or not isinstance(stored, int) or stored < 1:
        raise DataValidationError(f"max_cells must be a positive integer, got {stored!r:.40}")
    return min(stored, DEFAULT_MAX_CELLS)


def _write(path: str | os.PathLike, meta: dict, arrays: dict) -> Path:
    path = Path(path)
    text = json.dumps(meta, allow_nan=False)
    buf = _io.BytesIO()
    np.savez(buf, __meta__=np.array(text), **arrays)
    path.write_bytes(buf.getvalue())
    return path


def save_model(mrf: MarkovRandomField, path: str | os.PathLike) -> Path:
    """Write ``mrf`` (domain with labels, cliques, log-potentials) to ``path`` (``.npz``)."""
    enc = _Encoder()
    meta = {"format": "pgm_dp.MarkovRandomField", "version": _VERSION, **enc.model(mrf)}
    return _write(path, meta, enc.arrays)


def save_fit(fit: Fit, path: str | os.PathLike) -> Path:
    """Write a :class:`Fit` (model, history, info with its privacy metadata) to ``path``."""
    enc = _Encoder()
    meta = {
        "format": "pgm_dp.Fit",
        "version": _VERSION,
        "model": enc.model(fit.model),
        "history": enc(fit.history),
        "info": enc(fit.info),
    }
    return _write(path, meta, enc.arrays)


def save(obj: MarkovRandomField | Fit | NoisyMarginals, path: str | os.PathLike) -> Path:
    """Save a model, a fit (``.npz``) or a release (JSON) to ``path``; returns the path."""
    if isinstance(obj, NoisyMarginals):
        Path(path).write_text(obj.to_json())
        return Path(path)
    if isinstance(obj, Fit):
        return save_fit(obj, path)
    if isinstance(obj, MarkovRandomField):
        return save_model(obj, path)
    raise TypeError(f"cannot save a {type(obj).__name__}; expected a model, fit or release")


class _Archive:
    """The arrays of a ``.npz`` file, each header checked up front, each read at most once."""

    def __init__(self, raw: bytes) -> None:
        self._zip = zipfile.ZipFile(_io.BytesIO(raw))
        cap = max(_MIN_CAP, _EXPANSION * len(raw))
        self._members: dict[str, tuple[zipfile.ZipInfo, tuple, np.dtype]] = {}
        for info in self._zip.infolist():
            key = info.filename.removesuffix(".npy")
            if key == info.filename or key in self._members:
                raise DataValidationError(f"unexpected archive member {info.filename!r:.80}")
            cap -= info.file_size
            if cap < 0:
                raise DataValidationError(
                    f"the archive would expand beyond {max(_MIN_CAP, _EXPANSION * len(raw))} "
                    f"bytes ({len(raw)} bytes on disk); refusing to read it"
                )
            self._members[key] = (info, *self._check_header(info))
        self._taken: set[str] = set()

    def _check_header(self, info: zipfile.ZipInfo) -> tuple[tuple, np.dtype]:
        with self._zip.open(info) as fp:
            version = np.lib.format.read_magic(fp)
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(fp)
            elif version == (2, 0):
                shape, _, dtype = np.lib.format.read_array_header_2_0(fp)
            else:
                raise DataValidationError(f"unsupported .npy version {version}")
            header = fp.tell()
        want = "U" if info.filename == "__meta__.npy" else _KINDS
        if dtype.hasobject or dtype.fields is not None or dtype.kind not in want:
            raise DataValidationError(f"{info.filename}: refusing dtype {dtype}")
        if header + math.prod(shape) * dtype.itemsize != info.file_size:
            raise DataValidationError(
                f"{info.filename}: header declares {dtype}{list(shape)}, which does not fill "
                f"its {info.file_size} bytes"
            )
        return tuple(shape), dtype

    def header(self, key: Any) -> tuple[tuple, np.dtype]:
        """``(shape, dtype)`` of array ``key``, without reading it."""
        if not isinstance(key, str) or key not in self._members or key == "__meta__":
            raise DataValidationError(f"the file refers to a missing array {key!r:.80}")
        return self._members[key][1:]

    def take(self, key: Any) -> np.ndarray:
        """Array ``key`` (each may be read once: a file refers to each array once)."""
        self.header(key)
        if key in self._taken:
            raise DataValidationError(f"the file refers to array {key!r} twice")
        self._taken.add(key)
        with self._zip.open(self._members[key][0]) as fp:
            return np.lib.format.read_array(fp, allow_pickle=False)

    def meta(self) -> dict:
        if "__meta__" not in self._members or self._members["__meta__"][1] != ():
            raise DataValidationError("no __meta__ document")
        with self._zip.open(self._members["__meta__"][0]) as fp:
            meta = json.loads(str(np.lib.format.read_array(fp, allow_pickle=False)))
        if not isinstance(meta, dict):
            raise DataValidationError("__meta__ is not a JSON object")
        return meta


# what a malformed file may raise while parsed (RuntimeError: an encrypted or unsupported member)
_BAD_FILE = (
    ValueError,
    KeyError,
    TypeError,
    AttributeError,
    OSError,
    EOFError,
    OverflowError,
    RecursionError,
    RuntimeError,
    zipfile.BadZipFile,
)


def _read(path: str | os.PathLike) -> tuple[dict, _Archive | None]:
    p = Path(path)
    if not p.is_file():
        raise DataValidationError(f"no such file: {p}")
    raw = p.read_bytes()
    if raw[:1] == b"{":  # a JSON release
        try:
            return {"format": "pgm_dp.NoisyMarginals", "text": raw.decode("utf-8")}, None
        except UnicodeDecodeError as err:
            raise DataValidationError(f"{p} is not a pgm_dp file: {err}") from None
    try:
        arrays = _Archive(raw)
        return arrays.meta(), arrays
    except DataValidationError as err:
        raise DataValidationError(f"{p} is not a valid pgm_dp file: {err}") from None
    except _BAD_FILE as err:
        raise DataValidationError(f"{p} is not a pgm_dp file: {err}") from None


def load(path: str | os.PathLike) -> MarkovRandomField | Fit | NoisyMarginals:
    """Read what :func:`save` wrote (the kind is stored in the file); a file that is not one
    raises :class:`DataValidationError` (see the module docstring for what is refused)."""
    meta, arrays = _read(path)
    kind = meta.get("format")
    try:
        if kind == "pgm_dp.NoisyMarginals":
            return NoisyMarginals.from_json(meta["text"] if arrays is None else "")
        if kind == "pgm_dp.MarkovRandomField" and arrays is not None:
            return _model(meta, arrays)
        if kind == "pgm_dp.Fit" and arrays is not None:
            dec = _decoder(arrays)
            return Fit(_model(meta["model"], arrays), dec(meta["history"]), dec(meta["info"]))
    except DataValidationError as err:
        raise DataValidationError(f"{path} is not a valid pgm_dp file: {err}") from None
    except _BAD_FILE as err:
        raise DataValidationError(f"{path} is not a valid pgm_dp file: {err!r}") from None
    raise DataValidationError(f"{path} holds an unknown format {kind!r:.80}")


def load_model(path: str | os.PathLike) -> MarkovRandomField:
    """A saved model; a saved fit gives its model."""
    obj = load(path)
    if isinstance(obj, Fit):
        return obj.model
    if not isinstance(obj, MarkovRandomField):
        raise DataValidationError(f"{path} holds a {type(obj).__name__}, not a model")
    return obj


def load_fit(path: str | os.PathLike) -> Fit:
    """A saved :class:`Fit`."""
    obj = load(path)
    if not isinstance(obj, Fit):
        raise DataValidationError(f"{path} holds a {type(obj).__name__}, not a fit")
    return obj
