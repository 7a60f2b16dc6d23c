"""Save / load in the open format (JSON + .npz): exact round trips of models, fits with their
privacy metadata, and releases."""

import io
import json
import tracemalloc
import zipfile

import numpy as np
import pytest

from pgm_dp import (
    ZCDP,
    ApproxDP,
    DataValidationError,
    Domain,
    MarkovRandomField,
    PureDP,
    release_marginals,
)
from pgm_dp.io import load, load_fit, load_model, save
from pgm_dp.learners import CGMEM, PSGD, NaiveMLE
from pgm_dp.models import third_order_chain


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, MarkovRandomField):
        return _same_model(a, b)
    if hasattr(a, "shape"):
        return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)
    return a == b or (a != a and b != b)


def _same_model(a, b) -> bool:
    return (
        a.domain == b.domain
        and a.cliques == b.cliques
        and all(map(np.array_equal, a.log_potentials, b.log_potentials))
    )


def test_model_round_trip_is_exact_with_labels_and_structural_zeros(tmp_path):
    dom = Domain.from_dict({"A": ["no", "yes"], "B": 3})
    table = np.array([[0.1, -np.inf, 2.5], [1 / 3, 0.0, -7.25]])
    mrf = MarkovRandomField(dom, [("A", "B")], [table])
    assert _same_model(load_model(save(mrf, tmp_path / "m.npz")), mrf)


@pytest.mark.filterwarnings("ignore::pgm_dp.ConvergenceWarning")  # max_iters=5 on purpose
@pytest.mark.parametrize("learner", ["naive", "cgm", pytest.param("psgd", marks=pytest.mark.slow)])
def test_fit_round_trip_keeps_privacy_metadata(tmp_path, learner):
    truth = third_order_chain(4, 2, rng=0)
    data = truth.sample(2000, rng=1)
    if learner == "psgd":
        fit = PSGD(epochs=1).fit(data, truth, budget=ApproxDP(1.0, 1e-3), rng=2)
    else:
        rel = release_marginals(data, truth, budget=PureDP(1.0), rng=2)
        fit = (NaiveMLE() if learner == "naive" else CGMEM(max_iters=5)).fit(rel, truth)
    back = load_fit(save(fit, tmp_path / "fit.npz"))
    assert _same_model(back.model, fit.model)
    assert _same(back.history, fit.history) and _same(back.info, fit.info)
    assert back.info["budget"] == fit.info["budget"]
    if learner == "psgd":
        assert back.info["spent"] == fit.info["spent"]


def test_release_round_trip_and_bad_files(tmp_path):
    truth = third_order_chain(4, 2, rng=0)
    rel = release_marginals(truth.sample(100, rng=1), truth, budget=PureDP(1.0), rng=2)
    assert load(save(rel, tmp_path / "r.json")) == rel
    (tmp_path / "bad.npz").write_bytes(b"garbage")
    with pytest.raises(DataValidationError, match="not a pgm_dp file"):
        load(tmp_path / "bad.npz")
    with pytest.raises(DataValidationError, match="no such file"):
        load(tmp_path / "missing.npz")


# -- crafted files -----------------------------------------------------------------------------
def _fit_file(tmp_path):
    truth = third_order_chain(3, 2, rng=0)
    rel = release_marginals(truth.sample(200, rng=1), truth, budget=PureDP(1.0), rng=2)
    return save(NaiveMLE().fit(rel, truth), tmp_path / "fit.npz")


def _rewrite(path, edit):
    """The archive at ``path`` with its metadata passed through ``edit``."""
    with np.load(path) as f:
        arrays = {k: f[k] for k in f.files}
    meta = edit(json.loads(str(arrays.pop("__meta__"))))
    np.savez(path, __meta__=np.array(json.dumps(meta)), **arrays)
    return path


_CALLS = [
    {"__dataclass__": "pgm_dp.io:save", "obj": None, "path": "/tmp/x"},
    {"__dataclass__": "pgm_dp._config:enable_compilation_cache", "path": "/tmp/cache"},
    {"__dataclass__": "pgm_dp.privacy.release:release_marginals", "budget": None},
    {
        "__dataclass__": "pgm_dp.privacy.accountant:Charge",
        "what": "x",
        "mechanism": "y",
        "scale": 1.0,
        "cost": None,
    },  # fmt: skip
    {"__dataclass__": "os:system", "command": "true"},
    {"__dataclass__": ["not", "a", "name"]},
]


@pytest.mark.parametrize("entry", _CALLS, ids=lambda e: str(e["__dataclass__"]))
def test_load_refuses_types_outside_the_allow_list(tmp_path, entry, monkeypatch):
    called = []
    monkeypatch.setattr("pgm_dp.io.save", lambda *a, **k: called.append(a))
    monkeypatch.setattr("pgm_dp._config.enable_compilation_cache", lambda *a: called.append(a))
    path = _rewrite(_fit_file(tmp_path), lambda m: m["info"]["__dict__"].update(x=entry) or m)
    with pytest.raises(DataValidationError, match="refusing to load a value of type"):
        load(path)
    assert not called


@pytest.mark.parametrize(
    "budget, message",
    [
        ({"epsilon": 1.0, "extra": 2}, "needs the fields"),
        ({}, "needs the fields"),
        ({"epsilon": "1.0"}, "must be a real"),
        ({"epsilon": True}, "must be a real"),
        ({"epsilon": [1.0]}, "must be a real"),
        ({"epsilon": {"__dataclass__": "pgm_dp.privacy.budget:PureDP", "epsilon": 1}}, "real"),
        ({"epsilon": -1.0}, "invalid"),
        ({"epsilon": {"__float__": "1e5"}}, "non-finite"),
    ],
)
def test_load_checks_the_fields_of_allowed_types(tmp_path, budget, message):
    entry = {"__dataclass__": "pgm_dp.privacy.budget:PureDP", **budget}
    path = _rewrite(_fit_file(tmp_path), lambda m: m["info"]["__dict__"].update(x=entry) or m)
    with pytest.raises(DataValidationError, match=message):
        load(path)


def test_allowed_value_types_round_trip_and_others_are_not_saved(tmp_path):
    from pgm_dp.io import VALUE_TYPES
    from pgm_dp.privacy import NoiseModel
    from pgm_dp.privacy.accountant import Charge

    fit = load_fit(_fit_file(tmp_path))
    values = [PureDP(1.0), ZCDP(0.5), ApproxDP(1.0, 1e-6), NoiseModel("discrete_gaussian", 2.0)]
    assert {f"{type(v).__module__}:{type(v).__qualname__}" for v in values} == set(VALUE_TYPES)
    fit.info["values"] = values
    fit.info["edges"] = frozenset({(0, 1), (1, 2)})
    back = load_fit(save(fit, tmp_path / "f.npz"))
    assert back.info["values"] == values and back.info["edges"] == fit.info["edges"]
    fit.info["charge"] = Charge("x", "laplace", 1.0, PureDP(1.0))
    with pytest.raises(DataValidationError, match="cannot save a value of type"):
        save(fit, tmp_path / "g.npz")
    fit.info["charge"] = np.array([{"a": 1}], dtype=object)
    with pytest.raises(DataValidationError, match="cannot save an array of dtype object"):
        save(fit, tmp_path / "g.npz")


def _npy(shape, dtype, body=b""):
    """A .npy member: a valid header declaring ``shape``/``dtype``, then ``body``."""
    buf = io.BytesIO()
    header = {"descr": np.dtype(dtype).str, "fortran_order": False, "shape": shape}
    np.lib.format.write_array_header_1_0(buf, header)
    return buf.getvalue() + body


def _archive(path, members, compress=zipfile.ZIP_STORED):
    meta = json.dumps({"format": "pgm_dp.Fit", "version": 1})
    with zipfile.ZipFile(path, "w", compression=compress) as z:
        z.writestr("__meta__.npy", _npy((), f"<U{len(meta)}", meta.encode("utf-32-le")))
        for name, data in members.items():
            z.writestr(name, data)
    return path


def _quick_and_small(fn):
    """Run ``fn``; assert it allocated < 8 MB (Python-tracked): refused before reading."""
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < 8e6


@pytest.mark.parametrize(
    "member, message",
    [
        (_npy((10**10,), "<f8", b"\0" * 64), "does not fill"),
        (_npy((4,), "|O", b"\0" * 32), "refusing dtype"),
        (_npy((2,), [("a", "<f8")], b"\0" * 16), "refusing dtype"),
        (_npy((2,), "|V8", b"\0" * 16), "refusing dtype"),
        (b"\x93NUMPY\x09\x00", "version"),
    ],
)
def test_archive_headers_are_checked_before_reading(tmp_path, member, message):
    path = _archive(tmp_path / "x.npz", {"a0.npy": member})
    with pytest.raises(DataValidationError, match=message):
        _quick_and_small(lambda: load(path))


def test_zip_bomb_is_refused_without_inflating(tmp_path):
    """A 64 MB array of zeros deflated to ~60 kB: refused from the declared sizes."""
    path = tmp_path / "bomb.npz"
    n = 8 * 2**20
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        meta = json.dumps({"format": "pgm_dp.Fit", "version": 1})
        z.writestr("__meta__.npy", _npy((), f"<U{len(meta)}", meta.encode("utf-32-le")))
        with z.open("a0.npy", "w", force_zip64=True) as fh:
            fh.write(_npy((n,), "<f8"))
            for _ in range(64):
                fh.write(bytes(n // 8))
    assert path.stat().st_size < 200_000
    with pytest.raises(DataValidationError, match="expand beyond"):
        _quick_and_small(lambda: load(path))


def test_arrays_are_read_once_and_must_fit_the_model(tmp_path):
    path = _fit_file(tmp_path)

    def twice(m):
        m["info"]["__dict__"]["x"] = [m["model"]["tables"][0], m["model"]["tables"][0]]
        return m

    with pytest.raises(DataValidationError, match="twice"):
        load(_rewrite(path, twice))
    path = _fit_file(tmp_path)

    def grow(m):
        m["model"]["domain"]["shape"] = [5] * len(m["model"]["domain"]["shape"])
        return m

    with pytest.raises(DataValidationError, match="expected float64"):
        load(_rewrite(path, grow))
    path = _fit_file(tmp_path)
    with pytest.raises(DataValidationError, match="missing array"):
        load(_rewrite(path, lambda m: m["info"]["__dict__"].update(x={"__array__": "zz"}) or m))


@pytest.mark.parametrize("dtype", ["U1000000000", "object", "complex128", 7])
def test_release_dtype_must_be_int64_or_float64(tmp_path, dtype):
    truth = third_order_chain(3, 2, rng=0)
    rel = release_marginals(truth.sample(100, rng=1), truth, budget=PureDP(1.0), rng=2)
    doc = json.loads(rel.to_json())
    doc["dtype"][0] = dtype
    (tmp_path / "r.json").write_text(json.dumps(doc))
    with pytest.raises(DataValidationError, match="int64 or float64"):
        _quick_and_small(lambda: load(tmp_path / "r.json"))


def test_malformed_metadata_is_a_data_validation_error(tmp_path):
    deep = json.dumps({"format": "pgm_dp.Fit", "model": "[" * 100_000})
    bad = {"format": "pgm_dp.Fit", "model": {"domain": 3}, "history": [], "info": {}}
    for meta in (deep, json.dumps(bad), json.dumps([1, 2])):
        np.savez(tmp_path / "m.npz", __meta__=np.array(meta))
        with pytest.raises(DataValidationError):
            load(tmp_path / "m.npz")
    (tmp_path / "r.json").write_text('{"format": "pgm_dp.NoisyMarginals"}')
    with pytest.raises(DataValidationError):
        load(tmp_path / "r.json")


# -- crafted documents: a release, a plan ------------------------------------------------------
_CRAFTED = [None, True, -1, 0, 10**400, 1e308, float("inf"), float("nan"), "x", [], [1, [2]],
            {"a": {"b": []}}, -(10**30), 2**63, [-1, -2]]  # fmt: skip


def _paths(doc, head=()):
    """Every path into ``doc`` (the first three items of each list)."""
    yield head
    items = (
        doc.items()
        if isinstance(doc, dict)
        else enumerate(doc[:3] if isinstance(doc, list) else [])
    )
    for k, v in items:
        yield from _paths(v, (*head, k))


def _with(doc, path, value):
    if not path:
        return value
    out = json.loads(json.dumps(doc))
    inner = out
    for k in path[:-1]:
        inner = inner[k]
    inner[path[-1]] = value
    return out


def _documents():
    import pandas as pd

    from pgm_dp.prepare import prepare_plan

    df = pd.DataFrame({"sex": ["F", "M", None, "F"] * 50, "age": [23, 41.5, 67, None] * 50})
    plan = prepare_plan(df, {"sex": ["F", "M"], "age": {"bins": [0, 30, 50, 120]}},
                        budget=PureDP(1.0), rng=0)  # fmt: skip
    return {"release": plan.one_way.to_json(), "plan": plan.to_json()}


@pytest.mark.parametrize("kind", ["release", "plan"])
def test_a_crafted_document_raises_a_value_error_of_the_package(kind):
    """Every field of a saved release or plan replaced by a wrong type, nested junk, a huge
    or negative number, NaN or inf: each load raises a ``ValueError`` subclass of
    :mod:`pgm_dp.errors` or loads, never a bare ``TypeError`` / ``OverflowError``."""
    from pgm_dp.errors import PgmDpError
    from pgm_dp.prepare import Preparation
    from pgm_dp.privacy import NoisyMarginals

    read = {"release": NoisyMarginals.from_json, "plan": Preparation.from_json}[kind]
    doc = json.loads(_documents()[kind])
    for path in _paths(doc):
        for value in _CRAFTED:
            text = json.dumps(_with(doc, path, value))
            try:
                read(text)
            except PgmDpError as err:
                assert isinstance(err, ValueError), (path, value, err)
    with pytest.raises(DataValidationError):
        read("[1, 2")


def test_inf_in_a_release_file_is_a_data_validation_error(tmp_path):
    doc = json.loads(_documents()["release"])
    doc["noisy"][0][0] = float("inf")  # an integer table
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    from pgm_dp.privacy import NoisyMarginals

    with pytest.raises(DataValidationError, match="malformed release"):
        NoisyMarginals.from_json(path.read_text())
    with pytest.raises(DataValidationError):
        load(path)
    doc["dtype"][0] = "float64"  # a float table: NaN and inf refused too
    for value in (float("inf"), float("nan")):
        doc["noisy"][0][0] = value
        with pytest.raises(DataValidationError, match="finite"):
            NoisyMarginals.from_json(json.dumps(doc))
