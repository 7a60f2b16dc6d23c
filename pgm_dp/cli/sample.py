"""``pgm-dp sample MODEL.npz -n N --out synth.csv``: synthetic records of a private fit.

The fit must come from ``pgm-dp fit --data`` (it keeps its preparation, which decodes the
model's codes to the table's own categories). Records are drawn exactly from the model
(forward sampling down its junction tree) and written chunk by chunk, so memory stays flat
however large ``-n`` is; ``.csv`` or ``.parquet`` by the name of ``--out``. Binned number
columns are written as their interval labels ``"[a, b)"`` (``--numbers interval``, the
default), as numbers drawn uniformly within the bin (``--numbers uniform``) or as the bin's
midpoint (``--numbers midpoint``). A missing value is an empty cell, as often as the model
gives the missing state mass (``--no-missing``: conditioned on none). Sampling spends no
budget (post-processing of the fit); ``--seed`` makes the records reproducible
(:func:`pgm_dp.table.synth.write_table`).
"""

from __future__ import annotations

import argparse

from . import _args
from ._data import say

__all__ = ["add_parser", "NUMBERS", "CHUNK"]

#: :data:`pgm_dp.table.synth.NUMBERS` and :data:`pgm_dp.table.synth.CHUNK`, written here so that the
#: parser imports nothing heavy (a test checks they match).
NUMBERS = ("interval", "uniform", "midpoint")
CHUNK = 131072


def _table_file(text: str) -> str:
    """An output file named ``.csv``, ``.parquet`` or ``.pq`` in a writable folder."""
    if not text.lower().endswith((".csv", ".parquet", ".pq")):
        raise argparse.ArgumentTypeError(f"name the output .csv or .parquet, got {text!r}")
    return _args.output_file(text)


def _run(args) -> None:
    import time

    from .._progress import step
    from ..table.synth import write_table

    step("loading the fit and building its sampler")
    start = time.process_time()
    missing = "never" if args.no_missing else "model"
    path = write_table(
        args.model,
        args.n,
        args.out,
        rng=args.seed,
        numbers=args.numbers,
        missing=missing,
        chunk_size=args.chunk_size,
    )
    seconds = time.process_time() - start
    say(f"written: {path} ({args.n:,} records, numbers as {args.numbers}, {seconds:.1f} s CPU)")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("sample", help="synthetic records of a fit", description=__doc__)
    p.add_argument("model", type=_args.existing_file, help="a fit of 'pgm-dp fit --data' (.npz)")
    p.add_argument("-n", type=_args.positive_int, required=True, help="number of records")
    p.add_argument("--out", type=_table_file, required=True, help="synth.csv or synth.parquet")
    p.add_argument(
        "--numbers",
        choices=NUMBERS,
        default=NUMBERS[0],
        help="binned numbers: interval labels, uniform draws within the bin, or midpoints",
    )
    p.add_argument(
        "--no-missing",
        action="store_true",
        help="no missing values: draw from the model conditioned on none",
    )
    p.add_argument(
        "--chunk-size", type=_args.positive_int, default=CHUNK, help="records per chunk written"
    )
    p.add_argument("--seed", type=int, default=None, help="seed (reproducible records)")
    p.set_defaults(func=_run)
