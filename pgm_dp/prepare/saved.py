"""A preparation's saved form: the spec that prepares a table the same way
(:func:`spec_of`), its JSON document (:func:`document_of`) and the reading of one
(:func:`fields_of`, :func:`column_of`, :func:`check_saved`). A saved plan may come from
anywhere, so every field is checked on the way in: anything malformed raises
:class:`~pgm_dp.errors.DataValidationError` (or :class:`~pgm_dp.errors.DomainError`), never
a bare ``TypeError``.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping
from dataclasses import asdict, replace
from typing import Any

from ..domain import Domain
from ..errors import DataValidationError
from ..privacy import ZCDP, Charge, NoisyMarginals, PureDP
from ..privacy.budget import Budget
from ..privacy.release import check_records_per_person
from ._spec import DROP_FROM_DATA
from .binning import check_edges
from .columns import KINDS, MAX_STATES, RESERVED, ColumnPlan
from .persons import PERSON

__all__ = ["spec_of", "document_of", "fields_of", "column_of", "check_saved"]


def spec_of(plan: Any) -> dict:
    """The spec that prepares a table as ``plan`` does (``{column: entry}``, JSON types;
    :func:`~pgm_dp.prepare.prepare_plan` and ``--prepare`` read it): declared categories, the
    bins drawn (public or at private quantiles: post-processing), ``"drop"`` for dropped
    columns (``{"drop": true, "from_data": true}`` for one dropped as identifier-like, a
    decision read from the data). A column with anything read from the data without privacy
    keeps the mark ``"from_data": true``, so that the plan made from the spec lists the read
    again. Rare states are merged anew by the next plan's one-way release. The person column
    is ``"person"`` (its ``max_records_per_person`` is an option, not part of the spec).

    Args:
        plan: a :class:`~pgm_dp.prepare.Preparation`.
    """
    spec: dict = {}
    for d in plan.dropped:
        spec[str(d) if not isinstance(d, int) else d] = (
            dict(DROP_FROM_DATA) if _read_drop(plan, d) else "drop"
        )
    if plan.person is not None:
        spec[plan.person] = PERSON
    for c in plan.columns:
        if c.kind == "numeric":
            entry = {"bins": list(c.edges), "clip": c.clip}
            if c.integer:
                entry["integer"] = True
        else:
            entry = {"categories": list(c.states[: c.n_categories]), "other": c.other}
        entry["missing"] = c.missing or c.missing_to is not None
        if "data" in c.source or any(repr(c.name) in r for r in plan.nonprivate_reads):
            entry["from_data"] = True
        spec[c.name] = entry
    return spec


def _read_drop(plan: Any, name: Hashable) -> bool:
    """Whether ``name`` was dropped as identifier-like, a read without privacy."""
    return any(r.startswith(f"{name!r} dropped as identifier-like") for r in plan.nonprivate_reads)


def document_of(plan: Any) -> dict:
    """The JSON document of ``plan`` (a :class:`~pgm_dp.prepare.Preparation`): its columns,
    charges and one-way release, exact float round trip; no record."""
    spent = plan.budget_spent
    return {
        "format": "pgm_dp.Preparation",
        "version": 1,
        "columns": [c.to_dict() for c in plan.columns],
        "dropped": list(plan.dropped),
        "nonprivate_reads": list(plan.nonprivate_reads),
        "notes": list(plan.notes),
        "charges": [{**asdict(ch), "cost": _budget_dict(ch.cost)} for ch in plan.charges],
        "budget_spent": None if spent is None else _budget_dict(spent),
        "one_way": None if plan.one_way is None else json.loads(plan.one_way.to_json()),
        "person": plan.person,
        "max_records_per_person": plan.max_records_per_person,
        "privacy_unit": plan.privacy_unit,
    }


def fields_of(text: str) -> dict:
    """The fields of a :class:`~pgm_dp.prepare.Preparation` read from its JSON ``text``
    (:func:`document_of`), each checked.

    Args:
        text: the JSON document.
    """
    d = json.loads(text)
    if not isinstance(d, dict) or d.get("format") != "pgm_dp.Preparation":
        raise DataValidationError("not a pgm_dp.Preparation JSON document")
    one_way = d["one_way"]
    spent = d["budget_spent"]
    return dict(
        columns=tuple(column_of(c) for c in _list(d, "columns")),
        dropped=tuple(_list(d, "dropped", (str, int))),
        nonprivate_reads=tuple(_list(d, "nonprivate_reads", (str,))),
        notes=tuple(_list(d, "notes", (str,))),
        charges=tuple(_charge(c) for c in _list(d, "charges")),
        budget_spent=None if spent is None else _budget_of(spent),
        one_way=None if one_way is None else NoisyMarginals.from_json(json.dumps(one_way)),
        person=_person(d.get("person")),
        max_records_per_person=check_records_per_person(d.get("max_records_per_person", 1)),
    )


def column_of(d: Any) -> ColumnPlan:
    """A column of a saved plan: the inverse of :meth:`ColumnPlan.to_dict`; every field
    checked (:class:`DataValidationError` or :class:`DomainError`), since a saved plan may
    come from anywhere: the states are those its kind, edges, ``other`` and ``missing``
    make, ``merged`` lists two or more distinct full codes, ``missing_to`` is a full code of
    a column without a missing state."""
    if not isinstance(d, Mapping):
        raise DataValidationError(f"a column of a plan must be an object, got {d!r:.60}")
    fields = set(ColumnPlan.__dataclass_fields__)
    if set(d) - fields or {"name", "kind", "states", "source", "missing"} - set(d):
        raise DataValidationError(f"a column of a plan has the fields {sorted(fields)}")
    name = d["name"]
    if isinstance(name, bool) or not isinstance(name, str | int):
        raise DataValidationError(f"a column's name must be a str or int, got {name!r:.60}")
    flags = {k: d.get(k, k == "clip") for k in ("missing", "other", "clip", "integer")}
    if not all(v is True or v is False for v in flags.values()) or d["kind"] not in KINDS:
        raise DataValidationError(
            f"column {name!r}: kind, missing, other, clip or integer malformed"
        )
    if not isinstance(d["source"], str) or not isinstance(d["states"], list):
        raise DataValidationError(f"column {name!r}: source or states malformed")
    if d["kind"] == "numeric":
        if flags["other"]:
            raise DataValidationError(f"column {name!r}: a numeric column has no '<other>'")
        edges = check_edges(d.get("edges"), name, MAX_STATES)
        plan = ColumnPlan.numeric(
            name, edges, d["source"], flags["missing"], flags["clip"], flags["integer"]
        )
    else:
        if flags["integer"]:
            raise DataValidationError(f"column {name!r}: only a numeric column is integer")
        n_cat = len(d["states"]) - flags["other"] - flags["missing"]
        cats = tuple(d["states"][: max(n_cat, 0)])
        if not cats or any(isinstance(c, str) and c in RESERVED for c in cats):
            raise DataValidationError(f"column {name!r}: categories malformed")
        Domain([name], [len(cats)], [cats])  # distinct labels of supported types
        plan = ColumnPlan.categorical(name, cats, d["source"], flags["missing"], flags["other"])
    stray_edges = d.get("edges") is not None and d["kind"] != "numeric"
    if stray_edges or plan.states != tuple(d["states"]):
        raise DataValidationError(f"column {name!r}: states do not match its kind and edges")
    merged = _codes_of(d.get("merged", []), plan, name)
    return replace(plan, merged=merged, missing_to=_missing_to(d.get("missing_to"), plan))


def _code(v: Any, plan: ColumnPlan, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < len(plan.states):
        raise DataValidationError(
            f"column {plan.name!r}: {what} must be codes in 0..{len(plan.states) - 1}, "
            f"got {v!r:.40}"
        )
    return v


def _codes_of(merged: Any, plan: ColumnPlan, name: Hashable) -> tuple[int, ...]:
    """A saved ``merged``: none, or at least two distinct full codes, in order."""
    if not isinstance(merged, list):
        raise DataValidationError(f"column {name!r}: merged must be a list, got {merged!r:.40}")
    codes = tuple(_code(v, plan, "merged") for v in merged)
    if len(codes) == 1 or list(codes) != sorted(set(codes)):
        raise DataValidationError(f"column {name!r}: merged must be two or more codes, in order")
    return codes


def _missing_to(to: Any, plan: ColumnPlan) -> int | None:
    """A saved ``missing_to``: ``None``, or a full code of a column without a missing state."""
    if to is None:
        return None
    if plan.missing:
        raise DataValidationError(f"column {plan.name!r}: missing_to with a missing state")
    return _code(to, plan, "missing_to")


def check_saved(plan: Any) -> Any:
    """``plan``, read from a document, checked as a whole: distinct column names, and a
    one-way release on its columns."""
    names = plan.names
    if not names or len(set(names)) < len(names):
        raise DataValidationError("a plan needs columns with distinct names")
    if plan.one_way is not None and plan.one_way.domain != plan.full_domain:
        raise DataValidationError("the plan's one-way release is not on its columns")
    return plan


def _list(d: dict, key: str, types: tuple = ()) -> list:
    """``d[key]``, a list (of ``types``, when given; never bools)."""
    v = d[key]
    if not isinstance(v, list) or (
        types and any(isinstance(x, bool) or not isinstance(x, types) for x in v)
    ):
        raise DataValidationError(f"{key} must be a list, got {v!r:.60}")
    return v


def _charge(c: Any) -> Charge:
    if not isinstance(c, dict) or set(c) != {"what", "mechanism", "scale", "cost"}:
        raise DataValidationError(f"a charge must have what, mechanism, scale, cost: {c!r:.60}")
    scale = c["scale"]
    if not isinstance(c["what"], str) or not isinstance(c["mechanism"], str):
        raise DataValidationError("a charge's what and mechanism must be text")
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, int | float)):
        raise DataValidationError(f"a charge's scale must be a number, got {scale!r:.40}")
    return Charge(c["what"], c["mechanism"], scale, _budget_of(c["cost"]))


def _person(v: Any) -> Any:
    """A saved plan's person column: ``None``, a name (text) or an integer column label."""
    if v is not None and (isinstance(v, bool) or not isinstance(v, str | int)):
        raise DataValidationError(f"a plan's person column must be a name, got {v!r:.40}")
    return v


def _budget_dict(b: Budget) -> dict:
    return {"type": type(b).__name__, **{k: getattr(b, k) for k in b.__dataclass_fields__}}


def _budget_of(d: Any) -> Budget:
    kinds = {"PureDP": (PureDP, "epsilon"), "ZCDP": (ZCDP, "rho")}
    kind = (
        kinds.get(d.get("type")) if isinstance(d, dict) and isinstance(d.get("type"), str) else None
    )
    if kind is None or set(d) != {"type", kind[1]}:
        raise DataValidationError(f"a budget must be PureDP or ZCDP, got {d!r:.60}")
    amount = d[kind[1]]
    if isinstance(amount, bool) or not isinstance(amount, int | float):
        raise DataValidationError(f"a budget's {kind[1]} must be a number, got {amount!r:.40}")
    return kind[0](amount)
