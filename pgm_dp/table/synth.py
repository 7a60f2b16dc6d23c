"""Synthetic records from a private fit, in the user's own values: :func:`sample_table`,
:func:`iter_table`, :func:`write_table` (``pgm-dp sample``) and :func:`sample_dask`.

The one route to records: every entry point (these, :meth:`pgm_dp.table.fit.TableFit.sample`
and ``pgm-dp sample``) builds a :class:`Synthesizer`, which loads the fit's preparation
(:func:`fit_preparation`), samples and decodes by :meth:`~pgm_dp.prepare.ColumnPlan.decode`,
so the same seed gives the same records with the same dtypes from each.

A fit of :func:`pgm_dp.table.fit.fit_table` (``pgm-dp fit --data``) keeps its preparation,
which maps the model's codes back to the table's columns. Records are drawn **exactly** from
the model: forward sampling down its junction tree (:class:`~pgm_dp.inference.sampling.
ForwardSampler`, exact for any model whose junction tree fits, trees included), then
decoded:

* a categorical column gives its categories (``"<other>"`` as is), as a pandas
  ``category`` column whose categories are the labels as declared, each of its own type
  (integers stay integers): one dtype from every entry point, missing values included; a
  state merged into ``"<rare>"`` was expanded in the model already
  (:func:`pgm_dp.table.synth.expand_model`), so every category is a value of the data's;
* a binned number column gives, by ``numbers``: ``"interval"`` (the default) the bin's label
  ``"[a, b)"`` (what the model knows, nothing more; a ``category`` column); ``"uniform"``
  a number drawn uniformly within its bin (float64; a synthetic value, not a value of the
  data), for a column declared ``"integer"`` a whole number drawn uniformly among the bin's
  whole numbers (an int64 column, nullable ``Int64`` when it has a missing state; within
  the declared range); ``"midpoint"`` the bin's midpoint (float64);
* the ``"<missing>"`` state is a missing value (``NaN``, an empty CSV cell), never the text.
  It appears as often as the model gives it mass, no more: a column whose model gives it
  none has none. ``missing="never"`` draws from the model conditioned on no missing value
  (every ``"<missing>"`` state's probability set to zero, then renormalised; exact).

Sampling is post-processing of the private fit: it spends no budget. Records are drawn in
blocks of :data:`BLOCK`, block ``b`` from its own random stream (``SeedSequence(entropy,
spawn_key=(b,))``, the entropy drawn once from ``rng``), so the records depend on ``rng`` and
``n`` only: :func:`iter_table` (chunks of ``chunk_size`` records, memory flat in ``n``),
:func:`sample_table` and :func:`sample_dask` (one Dask partition per chunk) give the same
records for the same seed, and ``numbers`` changes how a bin is written, not which bin.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._progress import step
from ..errors import DataValidationError, DomainError
from ..prepare.derived import derived_from_json, with_derived
from ..rng import RngLike, as_generator

__all__ = [
    "expand_model",
    "full_codes",
    "fit_preparation",
    "Synthesizer",
    "sample_table",
    "iter_table",
    "write_table",
    "sample_dask",
    "NUMBERS",
    "MISSING_MODES",
    "BLOCK",
    "CHUNK",
]

#: How a binned number column is written (module docstring); the first is the default.
NUMBERS = ("interval", "uniform", "midpoint")
#: ``"model"``: missing values as often as the model says; ``"never"``: conditioned away.
MISSING_MODES = ("model", "never")
#: Records per random stream (module docstring).
BLOCK = 4096
#: Default records per chunk of :func:`iter_table` / :func:`write_table` (a multiple of
#: :data:`BLOCK`).
CHUNK = 32 * BLOCK


def fit_preparation(fit: Any) -> tuple[Any, Any, tuple]:
    """``(model, preparation, derived columns)`` of a TableFit, a Fit of ``fit_table`` or
    its ``.npz`` path: the one loader of a fit's preparation (its ``info["preparation"]``,
    checked by :meth:`~pgm_dp.prepare.Preparation.from_json`) and of its derived columns
    (:mod:`pgm_dp.prepare.derived`, not modelled).

    Args:
        fit: a :class:`~pgm_dp.table.fit.TableFit`, a :class:`~pgm_dp.learners.Fit` or a path.
    """
    from ..prepare.table import Preparation

    if isinstance(fit, str | os.PathLike):
        from ..io import load

        fit = load(fit)
    if hasattr(fit, "plan") and hasattr(fit, "fit"):  # a TableFit
        return fit.fit.model, fit.plan, fit.derived
    info = getattr(fit, "info", None)
    text = info.get("preparation") if isinstance(info, dict) else None
    if text is None:
        raise DataValidationError(
            "this fit has no preparation to decode its records (fit it from a table: "
            "'pgm-dp fit --data' or pgm_dp.table.fit.fit_table)"
        )
    return fit.model, Preparation.from_json(text), derived_from_json(info.get("derived"))


def _check_n(n: Any, what: str = "n", low: int = 1) -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < low:
        raise DataValidationError(f"{what} must be an integer >= {low}, got {n!r}")
    return int(n)


def _without_missing(model, plan):
    """The log-potentials of ``model`` with every ``"<missing>"`` state made impossible (in
    one table containing the column), i.e. the model conditioned on no missing value."""
    tables = [np.array(t, dtype=np.float64) for t in model.log_potentials]
    for c in plan.columns:
        if not c.missing:
            continue
        f = next(i for i, cl in enumerate(model.cliques) if c.name in cl)
        index = [slice(None)] * tables[f].ndim
        index[model.cliques[f].index(c.name)] = len(c.states) - 1
        tables[f][tuple(index)] = -np.inf
    return tables


class Synthesizer:
    """The sampler and decoder of one fit (module docstring); build once, draw often.

    Args:
        fit: a :class:`~pgm_dp.table.fit.TableFit`, a :class:`~pgm_dp.learners.Fit` of
            :func:`~pgm_dp.table.fit.fit_table` (its ``info["preparation"]``) or the path of
            its ``.npz`` file.
        numbers: one of :data:`NUMBERS`: how binned numbers are written.
        missing: one of :data:`MISSING_MODES`.
    """

    def __init__(self, fit: Any, numbers: str = "interval", missing: str = "model") -> None:
        if numbers not in NUMBERS:
            raise DomainError(f"numbers must be one of {NUMBERS}, got {numbers!r}")
        if missing not in MISSING_MODES:
            raise DomainError(f"missing must be one of {MISSING_MODES}, got {missing!r}")
        from ..inference.sampling import ForwardSampler

        model, plan, self.derived = fit_preparation(fit)
        full = plan.full_domain
        if tuple(model.domain.attributes) != tuple(full.attributes) or tuple(
            model.domain.shape
        ) != tuple(full.shape):
            raise DataValidationError("the model's domain is not its preparation's")
        tables = model.log_potentials if missing == "model" else _without_missing(model, plan)
        self.sampler = ForwardSampler(model.junction_tree(), tables)
        self.plan, self.numbers, self.missing = plan, numbers, missing
        self.columns = list(plan.names)
        # the extra uniforms of numbers="uniform": one per numeric column, drawn always
        self._numeric = [j for j, c in enumerate(plan.columns) if c.kind == "numeric"]
        self._draws = self.sampler.n_draws + len(self._numeric)

    # -- randomness ----------------------------------------------------------------------------
    @staticmethod
    def entropy(rng: RngLike) -> int:
        """The 128-bit entropy of the blocks' streams, drawn once from ``rng``."""
        hi, lo = as_generator(rng).integers(0, 2**63, size=2, dtype=np.int64)
        return (int(hi) << 64) | int(lo)

    def _uniforms(self, entropy: int, start: int, stop: int) -> np.ndarray:
        """The ``(draws, stop - start)`` uniforms of records ``start..stop-1``."""
        first, last = start // BLOCK, -(-stop // BLOCK)
        blocks = [
            np.random.Generator(
                np.random.PCG64(np.random.SeedSequence(entropy, spawn_key=(b,)))
            ).random((self._draws, BLOCK))
            for b in range(first, last)
        ]
        u = np.concatenate(blocks, axis=1) if len(blocks) > 1 else blocks[0]
        return u[:, start - first * BLOCK : stop - first * BLOCK]

    # -- records -------------------------------------------------------------------------------
    def codes(self, entropy: int, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """Full codes ``(stop - start, d)`` of records ``start..stop-1`` and the uniforms
        within bins of the numeric columns."""
        u = self._uniforms(entropy, start, stop)
        k = self.sampler.n_draws
        return self.sampler.draw(u[:k]), u[k:]

    def chunk(self, entropy: int, start: int, stop: int) -> pd.DataFrame:
        """Records ``start..stop-1`` of the stream ``entropy``, decoded by
        :meth:`~pgm_dp.prepare.ColumnPlan.decode`."""
        codes, within = self.codes(entropy, start, stop)
        numeric = dict(zip(self._numeric, within, strict=True))
        cols = {
            c.name: c.decode(codes[:, j], self.numbers, numeric.get(j))
            for j, c in enumerate(self.plan.columns)
        }
        out = pd.DataFrame(cols, columns=self.columns)
        out.index = pd.RangeIndex(start, stop)
        return with_derived(out, self.derived)

    def meta(self) -> pd.DataFrame:
        """An empty frame with the records' columns and dtypes."""
        return self.chunk(0, 0, 1).iloc[:0]

    def iter(self, n: int, rng: RngLike = None, chunk_size: int = CHUNK) -> Iterator[pd.DataFrame]:
        """:func:`iter_table` of this synthesizer."""
        n = _check_n(n)
        size = -(-_check_n(chunk_size, "chunk_size") // BLOCK) * BLOCK
        entropy = self.entropy(rng)
        step("records sampled", 0, n)
        for start in range(0, n, size):
            stop = min(start + size, n)
            yield self.chunk(entropy, start, stop)
            step("records sampled", stop, n)


def sample_table(
    fit: Any, n: int, *, rng: RngLike = None, numbers: str = "interval", missing: str = "model"
) -> pd.DataFrame:
    """``n`` synthetic records of a private fit, in the user's own values (module docstring).

    Args:
        fit: a ``TableFit``, a ``Fit`` of ``fit_table`` or the path of its ``.npz`` file.
        n: number of records (at least 1).
        rng: seed or Generator (``None``: fresh randomness); the same seed gives the same
            records as :func:`iter_table` and :func:`write_table`.
        numbers: binned numbers as ``"interval"`` labels (default), ``"uniform"`` draws
            within the bin, or ``"midpoint"`` values.
        missing: ``"model"`` (default) or ``"never"`` (conditioned on no missing value).

    Returns:
        A DataFrame with the prepared columns in order: ``category`` columns, float64 for
        numbers drawn within bins or at midpoints.
    """
    synth = Synthesizer(fit, numbers, missing)
    n = _check_n(n)
    return synth.chunk(synth.entropy(rng), 0, n)


def iter_table(
    fit: Any,
    n: int,
    *,
    rng: RngLike = None,
    numbers: str = "interval",
    missing: str = "model",
    chunk_size: int = CHUNK,
) -> Iterator[pd.DataFrame]:
    """:func:`sample_table`'s ``n`` records in chunks of ``chunk_size`` (rounded up to a
    multiple of :data:`BLOCK`): the same records for the same seed, memory flat in ``n``."""
    return Synthesizer(fit, numbers, missing).iter(n, rng, chunk_size)


def _arrow_table(df: pd.DataFrame):
    """``df`` as an Arrow table; a category column of mixed value types becomes text."""
    import pyarrow as pa

    cols = {}
    for name in df.columns:
        col = df[name]
        if isinstance(col.dtype, pd.CategoricalDtype):
            kinds = {type(v) for v in col.cat.categories}
            if len(kinds) > 1:
                col = col.cat.rename_categories([str(v) for v in col.cat.categories])
        cols[str(name)] = col
    return pa.Table.from_pandas(pd.DataFrame(cols), preserve_index=False)


def _file_format(path: Path, format: str | None) -> str:
    fmt = format or {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}.get(
        path.suffix.lower()
    )
    if fmt not in ("csv", "parquet"):
        raise DataValidationError(
            f"cannot tell the format of {str(path)!r}: name it .csv or .parquet, or give format"
        )
    return fmt


def write_table(
    fit: Any,
    n: int,
    path: str | os.PathLike,
    *,
    rng: RngLike = None,
    numbers: str = "interval",
    missing: str = "model",
    chunk_size: int = CHUNK,
    format: str | None = None,
) -> Path:
    """Write :func:`sample_table`'s ``n`` records to ``path`` (CSV or Parquet, by its suffix
    or ``format``), one chunk at a time: memory flat in ``n``. Parquet needs ``pyarrow``
    (one row group per chunk); CSV uses it when installed (faster), else pandas. Missing
    values are empty CSV cells / Parquet nulls. Returns the path."""
    path = Path(path)
    fmt = _file_format(path, format)
    synth = Synthesizer(fit, numbers, missing)
    chunks = synth.iter(n, rng, chunk_size)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        _write_arrow(chunks, path, lambda schema: pq.ParquetWriter(path, schema))
        return path
    try:
        import pyarrow.csv as pcsv
    except ImportError:
        pcsv = None
    if pcsv is not None:
        options = pcsv.WriteOptions(quoting_style="needed")  # quotes only where needed

        def open_csv(schema):
            return pcsv.CSVWriter(path, schema, write_options=options)

        _write_arrow(chunks, path, open_csv)
        return path
    for i, df in enumerate(chunks):
        df.to_csv(path, mode="w" if i == 0 else "a", header=i == 0, index=False)
    return path


def _write_arrow(chunks: Iterator[pd.DataFrame], path: Path, open_writer) -> None:
    writer = None
    try:
        for df in chunks:
            table = _arrow_table(df)
            if writer is None:
                writer = open_writer(table.schema)
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()


def sample_dask(
    fit: Any,
    n: int,
    *,
    rng: RngLike = None,
    numbers: str = "interval",
    missing: str = "model",
    chunk_size: int = CHUNK,
):
    """:func:`sample_table`'s ``n`` records as a lazy Dask DataFrame, one partition per
    chunk (drawn where it is computed): for ``n`` beyond one machine's memory, e.g.
    ``sample_dask(fit, 10**8, rng=0).to_parquet("synth/")``. Needs the ``dask`` extra."""
    import dask.dataframe as dd

    synth = Synthesizer(fit, numbers, missing)
    n = _check_n(n)
    size = -(-_check_n(chunk_size, "chunk_size") // BLOCK) * BLOCK
    entropy = synth.entropy(rng)
    bounds = [(s, min(s + size, n)) for s in range(0, n, size)]
    divisions = [s for s, _ in bounds] + [n - 1]
    return dd.from_map(
        lambda b: synth.chunk(entropy, *b), bounds, meta=synth.meta(), divisions=divisions
    )


def expand_model(model, plan):
    """``model`` (on ``plan.domain``, rare states merged) as a model on ``plan.full_domain``:
    a full state in a ``"<rare>"`` group of ``m`` states gets ``1/m`` of the group's
    probability, exactly the distribution that decoding (uniform expansion, MST's
    ``reverse_data``) draws from. Each table is indexed by the states' compressed codes,
    and ``-log m`` is added to the merged states in one clique of each variable."""
    from ..models import MarkovRandomField

    maps = {c.name: np.asarray(c.code_map) for c in plan.columns}
    done: set = set()
    tables = []
    for clique, table in zip(model.cliques, model.log_potentials, strict=True):
        t = np.asarray(table, dtype=np.float64)[np.ix_(*(maps[v] for v in clique))].copy()
        for axis, v in enumerate(clique):
            c = plan.column(v)
            if v in done or not c.merged:
                continue
            shift = np.zeros(len(c.states))
            shift[list(c.merged)] = -math.log(len(c.merged))
            shape = [1] * len(clique)
            shape[axis] = len(c.states)
            t = t + shift.reshape(shape)
            done.add(v)
        tables.append(t)
    return MarkovRandomField(plan.full_domain, model.cliques, tables)


def full_codes(plan, df):
    """The :class:`~pgm_dp.domain.Codes` of ``df`` on ``plan.full_domain`` (the domain of a
    saved fit's model)."""
    from ..domain import Codes
    from ..prepare._spec import check_frame

    df = check_frame(df)
    cols = [c.encode_full(df[c.name]) for c in plan.columns]
    arr = np.column_stack(cols) if cols else np.empty((len(df), 0), dtype=np.int64)
    return Codes(arr, plan.full_domain, df.index)
