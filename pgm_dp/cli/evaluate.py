"""``pgm-dp evaluate``: exact KL(reference || model) and the held-out mean log-likelihood
of a data file under the model (nats per record)."""

from __future__ import annotations

from . import _args
from ._data import read_data, read_structure, say

__all__ = ["add_parser"]


def _run(args) -> None:
    if args.reference is None and args.data is None:
        raise ValueError("give --reference, --data or both")
    from ..io import load_model
    from ..metrics import kl_divergence, log_likelihood

    model = load_model(args.model)
    if args.reference is not None:
        ref = read_structure(args.reference, model.domain)
        say(f"KL(reference || model) = {kl_divergence(ref, model):.6g}")
    if args.data is not None:
        data = read_data(args.data)
        say(f"held-out log-likelihood = {log_likelihood(model, data):.6g} ({len(data):,} records)")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "evaluate", help="KL and held-out log-likelihood", description=__doc__
    )
    p.add_argument("--model", type=_args.existing_file, required=True, help="a fit or model .npz")
    p.add_argument("--reference", type=_args.existing_file, help="reference: .npz or pgmpy file")
    p.add_argument("--data", type=_args.existing_file, help="held-out CSV or Parquet file")
    p.set_defaults(func=_run)
