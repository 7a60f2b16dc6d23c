"""``pgm-dp evaluate``: exact KL(reference || model) and the held-out mean log-likelihood
of a data file under the model (nats per record). A fit of ``pgm-dp fit --data`` keeps its
preparation: the data are then read in the user's own values, encoded as the fit's were,
on the full domain the fit's model is saved on, and the private independent model of its
noisy one-way tables (the baseline the fit should beat) is scored beside it."""

from __future__ import annotations

from . import _args
from ._data import read_data, read_structure, say

__all__ = ["add_parser"]


def _run(args) -> None:
    if args.reference is None and args.data is None:
        raise ValueError("give --reference, --data or both")
    from ..compare.metrics import kl_divergence, log_likelihood
    from ..io import load
    from ..models import MarkovRandomField

    fit = load(args.model)
    model = getattr(fit, "model", fit)
    if not isinstance(model, MarkovRandomField):
        raise ValueError(f"{args.model} holds no model")
    text = getattr(fit, "info", {}).get("preparation")
    if args.reference is not None:
        ref = read_structure(args.reference, model.domain)
        kl = kl_divergence(ref, model)
        kl = 0.0 if abs(kl) < 1e-12 else kl  # KL >= 0: a smaller value is rounding
        say(f"KL(reference || model) = {kl:.4g}")
    if args.data is not None:
        data = read_data(args.data)
        if text is None:
            value, base = log_likelihood(model, data), None
        else:
            value, base = _prepared_loglik(model, text, data)
        line = f"held-out log-likelihood = {value:.4g} nats per record ({len(data):,} records)"
        if base is not None:
            line += f"; private independent model (baseline, same budget): {base:.4g}"
        say(line)


def _prepared_loglik(model, text: str, data) -> tuple[float, float | None]:
    """Mean log-likelihood of a fit that keeps its preparation, ``data`` in the user's values,
    and that of the private independent model of its preparation's noisy one-way tables
    (already paid for; ``None`` without them)."""
    import numpy as np

    from ..prepare.table import Preparation
    from ..table.check import independent_model
    from ..table.synth import full_codes

    plan = Preparation.from_json(text)
    codes = full_codes(plan, data)
    value = float(np.mean(model.log_prob(codes)))
    if plan.one_way is None:
        return value, None
    return value, float(np.mean(independent_model(plan.one_way).log_prob(codes)))


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "evaluate", help="KL and held-out log-likelihood", description=__doc__
    )
    p.add_argument("--model", type=_args.existing_file, required=True, help="a fit or model .npz")
    p.add_argument("--reference", type=_args.existing_file, help="reference: .npz or pgmpy file")
    p.add_argument("--data", type=_args.existing_file, help="held-out CSV or Parquet file")
    p.set_defaults(func=_run)
