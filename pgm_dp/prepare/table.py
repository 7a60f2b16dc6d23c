"""From a user's table to private discrete data: :func:`prepare_plan` and :class:`Preparation`.

A sensitive CSV rarely arrives as integer codes: it has strings, numbers, missing cells and,
when written by ``DataFrame.to_csv()``, a row-number column. :func:`prepare_plan` turns it into
a frozen :class:`Preparation`, one :class:`~pgm_dp.prepare.columns.ColumnPlan` per column, with a
labelled :class:`~pgm_dp.Domain`, :meth:`~Preparation.encode` (table →
:class:`~pgm_dp.domain.Codes`) and
:meth:`~Preparation.decode` (codes → the user's values). Nothing about the data is read without
privacy unless asked, and every such read is listed in ``plan.nonprivate_reads``:

* **Identifiers.** A column not declared in ``spec`` that looks like a record identifier
  (:func:`~pgm_dp.prepare.columns.identifier_reason`: ``"Unnamed: 0"``, row numbers, all-distinct
  integers, strings with ``>= identifier_fraction * n`` distinct values) is refused with a
  :class:`~pgm_dp.errors.DataValidationError` naming it, or dropped with a note when
  ``drop_identifiers=True``.
* **Persons.** A column declared ``"person"`` in ``spec`` identifies a person with several
  rows (:mod:`pgm_dp.prepare.persons`): at most ``max_records_per_person`` rows of each are
  kept first, every sensitivity is that many times one record's, and the column is not
  prepared. An undeclared column that looks like one (``person_reason``) is refused.
* **Categorical columns** use the categories declared in ``spec`` (``{"sex": ["F", "M"]}``).
  ``categories="data"`` reads undeclared ones from the data (non-private; one
  :class:`NonPrivateWarning`). Values outside the declared categories go to an ``"<other>"``
  state when ``other=True``, else they are refused. An undeclared **flag** (non-missing
  values all booleans, or all the numbers 0 and 1) has the states ``(False, True)`` or
  ``(0, 1)``: decided from its values, not its pandas type (which one missing cell
  changes), a non-private read listed in the plan. Any other integer column is categorical
  only when declared so (``{"children": [0, 1, 2, 3]}``); its codes are the declared
  categories' positions (:class:`~pgm_dp.domain.Codes`, never read again by label), and
  decoding gives back the declared integers.
* **Numeric columns** are binned (:mod:`pgm_dp.prepare.binning`): public edges
  (``{"age": {"bins": [0, 18, 30, 45, 65, 120]}}``), public bounds cut into equal widths
  (``{"age": {"bounds": [0, 120], "n_bins": 10}}``), or public bounds cut at private
  quantiles (``{"age": {"bounds": [0, 120]}}``, optionally ``"quantiles": 8``: Smith's
  exponential mechanism, charged to the budget). A numeric column without bounds is refused
  unless ``bounds="data"``, which reads its minimum and maximum without privacy (warns).
* **Missing values** (NaN, None, empty strings) are a ``"<missing>"`` state of every column
  (``missing=True``, the default: decided without looking at the data); ``missing=False``
  refuses them; ``missing="data"`` adds the state only where the data have missing values
  (non-private). ``spec`` may set ``"missing"``, ``"other"`` and ``"clip"`` per column.
  With compression, a missing state whose noisy one-way count is below ``threshold`` noise
  standard deviations is folded away (its values, if any, encoded as the state with the
  largest noisy count; the paper leaves missing values open, this choice keeps a table
  without them free of them at no cost beyond the release).
* **One refusal, one spec format.** Every column left undecided is named in one
  :class:`~pgm_dp.errors.DataValidationError` before anything is spent (:func:`check_spec`),
  ending with a spec that decides them all. :meth:`Preparation.to_spec` gives the spec that
  prepares a table the same way; an entry marked ``"from_data": true`` (values read from the
  data when the spec was written) is listed among the plan's non-private reads.
* **Rare states are merged** as in MST (McKenna, Miklau & Sheldon 2021, "Winning the NIST
  contest: a scalable and general approach to differentially private synthetic data";
  private-pgm ``mechanisms/mst.py``, ``compress_domain``): the one-way marginals of every
  column are released with a share of the budget
  (:func:`pgm_dp.privacy.release_marginals`, Gaussian noise for a zCDP budget as in MST), and
  the states whose noisy count is below ``threshold`` (3) noise standard deviations are merged
  into one ``"<rare>"`` state (when there are at least two such states; one alone is already
  its own group). :meth:`Preparation.decode` expands a ``"<rare>"`` record back to one of its
  states uniformly at random (MST's ``reverse_data``), or in proportion to the clipped noisy
  counts (``expand="noisy"``). The noisy one-way tables are returned (``plan.one_way``, and
  on the compressed domain :meth:`~Preparation.compressed_measurements`) for a fit to reuse.

Decoding (:meth:`ColumnPlan.decode`, the decoder of synthetic records too): categories come
back as declared, in ``category`` columns (integers stay integers); binned numbers as interval
labels ``"[20, 30)"`` (``numeric="interval"``, the default: the honest answer, since only the
bin was modelled) or as the bins' midpoints (``numeric="midpoint"``, float64); ``"<missing>"``
as a missing value.

Privacy: the budget (``PureDP`` or ``ZCDP``) is spent only on private quantiles and the
one-way release, ``quantile_share`` of it on the quantiles when both run. Everything, including
the accountant's room for every charge, is checked before the first charge. The number of
records is not released: the one-way release estimates it from its noisy tables
(:func:`~pgm_dp.privacy.release_marginals`' default ``total="estimate"``).

Example
-------
>>> import pandas as pd
>>> from pgm_dp.privacy import ZCDP
>>> df = pd.DataFrame({"sex": ["F", "M", None, "F"] * 500, "age": [23, 41.5, 67, None] * 500})
>>> spec = {"sex": ["F", "M"], "age": {"bins": [0, 30, 50, 120]}}
>>> plan = prepare_plan(df, spec, budget=ZCDP(0.5), rng=0)
>>> plan.domain
Domain(sex: ['F', 'M', '<missing>'], age: ['[0, 30)', '[30, 50)', '[50, 120]', '<missing>'])
>>> codes = plan.encode(df)
>>> codes.array[:4].tolist()
[[0, 0], [1, 1], [2, 2], [0, 3]]
>>> plan.decode(codes.take([0, 1, 2]), rng=0).age.tolist()
['[0, 30)', '[30, 50)', '[50, 120]']
"""

from __future__ import annotations

import inspect
import json
import re
import warnings
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..domain import Codes, Domain
from ..encoding import encode_column
from ..errors import DataValidationError, DomainError, PrivacyParameterError, reading
from ..privacy import Accountant, Charge, NoisyMarginals
from ..privacy.accountant import check_accountant
from ..privacy.budget import Budget, budget_text, compose
from ..rng import RngLike, as_generator
from ._decisions import decide_columns
from ._spec import check_frame, make_options, parse_spec
from ._steps import precheck, private_steps, spend, spent
from .columns import ColumnPlan, draft_column
from .persons import bound_records, privacy_unit
from .saved import check_saved, document_of, fields_of, spec_of

__all__ = [
    "prepare_plan",
    "prepare_table",
    "check_spec",
    "Preparation",
    "PreparedTable",
    "NonPrivateWarning",
    "ColumnPlan",
]


class NonPrivateWarning(UserWarning):
    """Something was read from the data without differential privacy (asked for explicitly)."""


@dataclass(frozen=True, eq=False)
class Preparation:
    """A frozen preparation of a table (see the module docstring): ``columns`` (one
    :class:`ColumnPlan` each, in the table's order), ``dropped`` identifier columns,
    ``nonprivate_reads`` and ``notes`` (printed by :meth:`report`), the ``charges`` made and
    ``budget_spent`` (``None`` when nothing private ran), ``one_way`` (the noisy one-way
    marginals on :attr:`full_domain`, or ``None``), the ``person`` column (``None``: none
    declared) and ``max_records_per_person`` kept of each (:mod:`pgm_dp.prepare.persons`)."""

    columns: tuple[ColumnPlan, ...]
    dropped: tuple[Hashable, ...] = ()
    nonprivate_reads: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    charges: tuple[Charge, ...] = ()
    budget_spent: Budget | None = None
    one_way: NoisyMarginals | None = None
    person: Hashable | None = None
    max_records_per_person: int = 1

    @property
    def privacy_unit(self) -> str:
        """What the budget spent protects: ``"record"`` or ``"person (column 'id') with at
        most 3 records"`` (:func:`~pgm_dp.prepare.persons.privacy_unit`)."""
        return privacy_unit(self.person, self.max_records_per_person)

    @property
    def names(self) -> tuple[Hashable, ...]:
        """The prepared columns, in order."""
        return tuple(c.name for c in self.columns)

    @property
    def domain(self) -> Domain:
        """The labelled domain of the encoded (compressed) codes."""
        return Domain(
            self.names, [len(c.labels) for c in self.columns], [c.labels for c in self.columns]
        )

    @property
    def full_domain(self) -> Domain:
        """The labelled domain before rare states are merged (that of ``one_way``)."""
        return Domain(
            self.names, [len(c.states) for c in self.columns], [c.states for c in self.columns]
        )

    def column(self, name: Hashable) -> ColumnPlan:
        """The plan of one column."""
        for c in self.columns:
            if c.name == name:
                return c
        raise DomainError(f"unknown column {name!r}; the plan has {list(self.names)}")

    def encode(self, df: Any) -> Codes:
        """The :class:`~pgm_dp.domain.Codes` of ``df``'s columns on :attr:`domain` (``df``'s
        index kept; extra and dropped columns ignored; ``df`` is not modified): codes, which
        no later step reads by label (``.to_frame()`` gives them as a DataFrame). Raises
        :class:`DataValidationError` for a missing column, a value outside declared
        categories (without ``other``), a missing value without a missing state, a number
        outside the bins without ``clip``."""
        df = check_frame(df)
        lack = [n for n in self.names if n not in df.columns]
        if lack:
            raise DataValidationError(f"data lack columns {lack}")
        cols = [c.encode(df[c.name]) for c in self.columns]
        return Codes(np.column_stack(cols), self.domain, df.index)

    def decode(
        self, codes: Any, *, rng: RngLike = None, expand: str = "uniform", numeric: str = "interval"
    ) -> pd.DataFrame:
        """The user's values of codes on :attr:`domain` (a DataFrame with the plan's columns
        or an ``(n, d)`` array): see the module docstring for ``expand`` and ``numeric``.
        ``rng`` draws the states of ``"<rare>"`` records. Decoded as synthetic records are
        (:meth:`ColumnPlan.decode`): ``category`` columns of the declared labels, float64
        midpoints."""
        if expand not in ("uniform", "noisy"):
            raise DomainError(f"expand must be 'uniform' or 'noisy', got {expand!r}")
        if numeric not in ("interval", "midpoint"):
            raise DomainError(f"numeric must be 'interval' or 'midpoint', got {numeric!r}")
        arr = self._codes(codes)
        gen = as_generator(rng)
        out = {}
        for j, c in enumerate(self.columns):
            weights = self._expand_weights(c) if expand == "noisy" else None
            out[c.name] = c.decode(c.expand(arr[:, j], gen, weights), numeric)
        index = codes.index if isinstance(codes, pd.DataFrame | Codes) else None
        return pd.DataFrame(out, index=index, columns=list(self.names))

    def _codes(self, codes: Any) -> np.ndarray:
        """Validated ``(n, d)`` codes: :class:`~pgm_dp.domain.Codes` and integer columns are
        codes, ``category`` columns (as from :meth:`Domain.decode`) are read by label."""
        dom = self.domain
        if isinstance(codes, Codes):
            return dom.encode(codes)
        if not isinstance(codes, pd.DataFrame):
            return Domain(dom.attributes, dom.shape).encode(codes)
        lack = [n for n in self.names if n not in codes.columns]
        if lack:
            raise DataValidationError(f"codes lack columns {lack}")
        if len(codes) == 0:
            raise DataValidationError("codes are empty (0 records)")
        cols = []
        for name, size, labels in zip(dom.attributes, dom.shape, dom.labels, strict=True):
            by_label = isinstance(codes[name].dtype, pd.CategoricalDtype)
            cols.append(encode_column(codes[name], name, size, labels if by_label else None))
        return np.column_stack(cols)

    def _expand_weights(self, c: ColumnPlan) -> np.ndarray | None:
        """``expand="noisy"``: the merged states' noisy counts clipped at 0, normalised."""
        if not c.merged or self.one_way is None:
            return None
        y = np.asarray(self.one_way.noisy[(c.name,)], dtype=np.float64)[list(c.merged)]
        y = np.maximum(y, 0.0)
        return y / y.sum() if y.sum() > 0 else None

    def compressed_measurements(self) -> dict[Hashable, tuple[np.ndarray, np.ndarray]]:
        """The noisy one-way counts on :attr:`domain`: ``{column: (counts, variances)}``. A
        ``"<rare>"`` cell holds the sum of its merged noisy counts, with ``m`` times the noise
        variance (MST re-expresses the same sum, scaled by ``1/sqrt(m)``)."""
        if self.one_way is None:
            return {}
        out = {}
        for c in self.columns:
            y = np.asarray(self.one_way.noisy[(c.name,)], dtype=np.float64)
            var = self.one_way.noise[(c.name,)].variance
            counts = np.append(y[c.kept], y[list(c.merged)].sum()) if c.merged else y.copy()
            variances = np.full(counts.size, var)
            if c.merged:
                variances[-1] = var * len(c.merged)
            out[c.name] = (counts, variances)
        return out

    def report(self, total: Budget | None = None) -> str:
        """A readable account of the plan (``print(plan.report())``): one column per line,
        the charges grouped by step, budgets to four significant digits (exact values in
        :meth:`to_json`), each labelled as a share of ``total`` (the whole run's budget) when
        given."""
        lines = [f"Preparation of {len(self.columns)} columns"]
        lines.append(f"  {'column':<20} {'kind':<12} {'states':>6}  {'merged':>6}  source")
        for c in self.columns:
            merged = str(len(c.merged)) if c.merged else "-"
            extra = (" +other" if c.other else "") + (" +missing" if c.missing else "")
            lines.append(
                f"  {str(c.name):<20} {c.kind:<12} {len(c.labels):>6}  {merged:>6}  "
                f"{c.source}{extra}"
            )
        lines.append(
            "  (states: the states the model sees; merged: how many rare states, their noisy "
            "counts below the threshold in the notes, share one '<rare>' state, drawn back "
            "evenly in samples; +missing: a '<missing>' state, which samples may give)"
        )
        for head, items in (
            (
                "Dropped columns (as the spec asks, or identifier-like)",
                [repr(d) for d in self.dropped],
            ),
            ("Read from the data WITHOUT privacy", self.nonprivate_reads),
            ("Notes", self.notes),
        ):
            if items:
                lines.append(f"{head}:")
                lines.extend(f"  - {s}" for s in items)
        return "\n".join(lines + self._budget_lines(total))

    def _budget_lines(self, total: Budget | None) -> list[str]:
        """The budget the preparation spent, its charges grouped by step (a column's
        quantiles are one step)."""
        if self.budget_spent is None:
            return ["Privacy budget spent by the preparation: none"]
        spent = budget_text(self.budget_spent, total)
        lines = [f"Privacy budget spent by the preparation: {spent} per {self.privacy_unit}"]
        groups: dict[tuple[str, str], list[Budget]] = {}
        for ch in self.charges:
            groups.setdefault((re.sub(r" at [^:]*$", "", ch.what), ch.mechanism), []).append(
                ch.cost
            )
        zcdp = total is not None and not total.native().is_pure
        for (what, mechanism), costs in groups.items():
            draws = f" ({len(costs)} draws)" if len(costs) > 1 else ""
            if zcdp:  # pure charges of a zCDP run compose as the rho of each
                costs = [c.to_zcdp() if c.is_pure else c for c in costs]
            cost = budget_text(compose(*costs), total)
            lines.append(f"  - {what}{draws}: {mechanism}, {cost}")
        return lines

    def __str__(self) -> str:
        return self.report()

    def to_spec(self) -> dict:
        """The spec that prepares a table as this plan does (:func:`~.saved.spec_of`)."""
        return spec_of(self)

    def to_json(self) -> str:
        """JSON text of the plan, its charges and its one-way release (exact float round trip);
        see :meth:`from_json`. Holds no record, only what the report shows."""
        return json.dumps(document_of(self), allow_nan=False)

    @classmethod
    def from_json(cls, text: str) -> Preparation:
        """Inverse of :meth:`to_json`. A saved plan may come from anywhere: every field is
        checked (:func:`~.saved.fields_of`), and anything malformed raises
        :class:`DataValidationError` (or :class:`DomainError`), never a bare ``TypeError``."""
        with reading("plan (pgm_dp.Preparation JSON)"):
            return check_saved(cls(**fields_of(text)))


@dataclass(frozen=True, eq=False)
class PreparedTable:
    """A table prepared in one pass (:func:`prepare_table`): its ``preparation`` and the
    ``codes`` (:class:`~pgm_dp.domain.Codes` on ``preparation.domain``) of the rows it kept,
    at most ``max_records_per_person`` of each person: the rows every later statistic
    reads."""

    preparation: Preparation
    codes: Codes


def prepare_plan(df: Any, spec: Mapping | None = None, **options: Any) -> Preparation:
    """The :class:`Preparation` of :func:`prepare_table` (its arguments, its checks, its
    charges): how ``df`` becomes discrete codes, without the codes."""
    return prepare_table(df, spec, **options).preparation


def prepare_table(
    df: Any,
    spec: Mapping | None = None,
    *,
    budget: Budget | None = None,
    rng: RngLike = None,
    accountant: Accountant | None = None,
    categories: str | None = None,
    bounds: str | None = None,
    missing: bool | str = True,
    other: bool = False,
    drop_identifiers: bool = False,
    compress: bool | None = None,
    mechanism: str | None = None,
    n_bins: int = 8,
    grid: int = 1000,
    quantile_share: float = 0.5,
    threshold: float = 3.0,
    max_states: int = 1000,
    identifier_fraction: float = 0.5,
    max_records_per_person: int = 1,
) -> PreparedTable:
    """Plan how ``df`` (a pandas DataFrame, never modified) becomes discrete codes, and
    encode the rows kept, in one pass (:class:`PreparedTable`); see the module docstring.
    ``spec``: ``{column: [categories] | {"categories"|"bins"|"bounds"|"n_bins"|
    "quantiles"|"missing"|"other"|"clip": ...} | "drop"}``. ``budget`` (``PureDP`` or ``ZCDP``) pays
    for private quantiles and, when ``compress`` (default: whenever a budget is given), the one-way
    release (``mechanism``: default discrete Laplace for ``PureDP``, discrete Gaussian for ``ZCDP``)
    that merges states below ``threshold`` noise standard deviations. ``n_bins``: private-quantile
    bins of a numeric column given only bounds; ``grid``: candidate quantiles per column;
    ``max_states``: most states of a column. ``rng``: ``None`` for a real release (ChaCha20,
    OS-keyed); seeds are for tests. A column that ``spec`` declares ``"person"`` is the person
    column (:mod:`pgm_dp.prepare.persons`): at most ``max_records_per_person`` (``K``) rows of each
    person are kept, drawn with ``rng``, before anything is read; it is not prepared; the
    sensitivities of the private steps are ``K`` times those of one record.
    Every input error is raised before the budget is touched.
    """
    kw = dict(
        quantile_share=quantile_share,
        threshold=threshold,
        identifier_fraction=identifier_fraction,
        max_states=max_states,
        n_bins=n_bins,
        grid=grid,
        max_records_per_person=max_records_per_person,
    )
    opts = make_options(categories, bounds, missing, other, drop_identifiers, kw)
    check_accountant(accountant)
    df, entries, decided, gen = _checked(df, spec, opts, rng)
    reads, notes = list(decided.reads), list(decided.notes)
    if not decided.names:
        raise DataValidationError("no column is left to prepare")
    drafts = [draft_column(n, df[n], entries.get(n, {}), opts, reads) for n in decided.names]
    b_col, b_m, mech = private_steps(drafts, budget, compress, mechanism, opts.quantile_share)
    acc = None
    if b_col is not None or b_m is not None:
        acc = accountant if accountant is not None else Accountant(budget)
        precheck(acc, budget, drafts, b_col, b_m)
    if reads:
        warnings.warn(
            "read from the data WITHOUT differential privacy: " + "; ".join(reads),
            NonPrivateWarning,
            stacklevel=2,
        )
    start = 0 if acc is None else len(acc.charges)
    released = spend(df, drafts, (b_col, b_m, mech), opts, gen, acc, notes)
    charges = () if acc is None else tuple(acc.charges[start:])
    preparation = Preparation(
        columns=tuple(released.plans),
        dropped=decided.dropped,
        nonprivate_reads=tuple(reads),
        notes=tuple(notes),
        charges=charges,
        budget_spent=spent(budget, charges),
        one_way=released.one_way,
        person=decided.person,
        max_records_per_person=opts.max_records_per_person,
    )
    return PreparedTable(preparation, Codes(released.codes, preparation.domain, df.index))


def _checked(df: Any, spec: Mapping | None, opts: Any, rng: RngLike) -> tuple:
    """``(df, entries, decisions, gen)``: the frame checked and its columns decided on the
    whole table (every undecided column named in one message,
    :func:`~._decisions.decide_columns`), the parsed spec and the run's generator; then at
    most ``K`` rows of each person kept (:func:`_bounded`), once, before any statistic."""
    df = check_frame(df)
    if len(df) == 0:
        raise DataValidationError("data are empty (0 records)")
    entries = parse_spec(df, spec)
    decided = decide_columns(df, spec, entries, opts)
    gen = as_generator(rng)
    return _bounded(df, decided.person, opts.max_records_per_person, gen), entries, decided, gen


def _bounded(df: pd.DataFrame, person, k: int, gen) -> pd.DataFrame:
    """``df`` with at most ``k`` rows per ``person`` (:func:`~.persons.bound_records`); ``df``
    itself without a person column, where ``k`` must be 1."""
    if person is None:
        if k != 1:
            raise PrivacyParameterError(
                f"max_records_per_person={k} needs a person column: declare it (spec "
                "{column: 'person'}) so that at most that many records of each are kept"
            )
        return df
    return bound_records(df, person, k, gen)


def check_spec(df: Any, spec: Mapping | None = None, **options: Any) -> None:
    """Raise, in one :class:`DataValidationError`, for every column of ``df`` that ``spec``
    and ``options`` (those of :func:`prepare_plan`, its defaults otherwise) leave undecided:
    identifier-like columns, categories or bounds not declared. The message ends with a spec
    that decides them all (``"drop"``, ``{"categories": "data"}``, ``{"bounds": "data"}``).
    Spends nothing; imports no JAX."""
    defaults = {
        k: p.default
        for k, p in inspect.signature(prepare_table).parameters.items()
        if p.kind is p.KEYWORD_ONLY and k not in ("budget", "rng", "accountant", "compress")
    }
    unknown = set(options) - set(defaults) - {"compress"}
    if unknown:
        raise DomainError(f"check_spec got unknown options {sorted(unknown)}")
    kw = {**defaults, **{k: v for k, v in options.items() if k != "compress"}}
    head = ("categories", "bounds", "missing", "other", "drop_identifiers")
    opts = make_options(*(kw.pop(k) for k in head), {k: kw[k] for k in kw if k != "mechanism"})
    df = check_frame(df)
    decide_columns(df, spec, parse_spec(df, spec), opts)
