"""Saving and loading in an open format: JSON metadata and NumPy arrays, never pickle.

* a release (:class:`~pgm_dp.privacy.NoisyMarginals`): one JSON file (its ``to_json``);
* a model (:class:`~pgm_dp.MarkovRandomField`) or a learner's :class:`~pgm_dp.learners.Fit`:
  one ``.npz`` archive holding ``__meta__`` (a JSON document: format, version, domain with
  labels, cliques, history, info) and one float64 array per table. A fit's ``info`` keeps
  its privacy metadata — the ``budget`` of the release it was fitted to, or the cost
  ``spent`` by a record learner — as typed entries that load back as the same objects.

Every float is stored exactly (arrays in binary, JSON floats by ``repr``), so a round trip
gives equal tables, equal histories and equal budgets. :func:`load` reads any of the three.

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
import importlib
import io as _io
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from .domain import Domain
from .errors import DataValidationError
from .learners.base import Fit
from .models.mrf import MarkovRandomField
from .privacy import NoisyMarginals

__all__ = ["save", "load", "save_model", "load_model", "save_fit", "load_fit"]

_VERSION = 1


class _Encoder:
    """Tagged JSON for info values; arrays go to ``self.arrays``."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def array(self, value: Any) -> dict:
        key = f"a{len(self.arrays)}"
        self.arrays[key] = np.asarray(value)
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
        if dataclasses.is_dataclass(v) and type(v).__module__.startswith("pgm_dp."):
            fields = {f.name: self(getattr(v, f.name)) for f in dataclasses.fields(v)}
            return {"__dataclass__": f"{type(v).__module__}:{type(v).__qualname__}", **fields}
        if isinstance(v, dict):
            if all(isinstance(k, str) for k in v):
                return {"__dict__": {k: self(x) for k, x in v.items()}}
            return {"__items__": [[self(k), self(x)] for k, x in v.items()]}
        if isinstance(v, tuple):
            return {"__tuple__": [self(x) for x in v]}
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


def _decoder(arrays):
    def dec(v: Any) -> Any:
        if isinstance(v, list):
            return [dec(x) for x in v]
        if not isinstance(v, dict):
            return v
        if "__array__" in v:
            return np.array(arrays[v["__array__"]])
        if "__float__" in v:
            return float(v["__float__"])
        if "__model__" in v:
            return _model(v["__model__"], arrays)
        if "__release__" in v:
            return NoisyMarginals.from_json(v["__release__"])
        if "__domain__" in v:
            return Domain.from_json_dict(v["__domain__"])
        if "__dataclass__" in v:
            module, _, name = v["__dataclass__"].partition(":")
            if not module.startswith("pgm_dp."):
                raise DataValidationError(f"refusing to load class {v['__dataclass__']}")
            cls = getattr(importlib.import_module(module), name)
            return cls(**{k: dec(x) for k, x in v.items() if k != "__dataclass__"})
        if "__dict__" in v:
            return {k: dec(x) for k, x in v["__dict__"].items()}
        if "__items__" in v:
            return {_hashable(dec(k)): dec(x) for k, x in v["__items__"]}
        if "__tuple__" in v:
            return tuple(dec(x) for x in v["__tuple__"])
        raise DataValidationError(f"unknown entry in a saved file: {sorted(v)}")

    return dec


def _hashable(key: Any) -> Any:
    return tuple(_hashable(k) for k in key) if isinstance(key, list | tuple) else key


def _model(d: dict, arrays) -> MarkovRandomField:
    dom = Domain.from_json_dict(d["domain"])
    tables = [np.array(arrays[t["__array__"]]) for t in d["tables"]]
    return MarkovRandomField(
        dom, [tuple(c) for c in d["cliques"]], tables, max_cells=d["max_cells"]
    )


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


def _read(path: str | os.PathLike) -> tuple[dict, Any]:
    p = Path(path)
    if not p.is_file():
        raise DataValidationError(f"no such file: {p}")
    raw = p.read_bytes()
    if raw[:1] == b"{":  # a JSON release
        return {"format": "pgm_dp.NoisyMarginals", "text": raw.decode("utf-8")}, {}
    try:
        arrays = dict(np.load(_io.BytesIO(raw), allow_pickle=False))
        meta = json.loads(str(arrays.pop("__meta__")))
    except (ValueError, KeyError, OSError) as err:
        raise DataValidationError(f"{p} is not a pgm_dp file: {err}") from None
    return meta, arrays


def load(path: str | os.PathLike) -> MarkovRandomField | Fit | NoisyMarginals:
    """Read what :func:`save` wrote (the kind is stored in the file)."""
    meta, arrays = _read(path)
    kind = meta.get("format")
    if kind == "pgm_dp.NoisyMarginals":
        return NoisyMarginals.from_json(meta["text"])
    if kind == "pgm_dp.MarkovRandomField":
        return _model(meta, arrays)
    if kind == "pgm_dp.Fit":
        dec = _decoder(arrays)
        return Fit(_model(meta["model"], arrays), dec(meta["history"]), dec(meta["info"]))
    raise DataValidationError(f"{path} holds an unknown format {kind!r}")


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
