"""Learners on a user's own table at one budget: the driver of ``pgm-dp compare --data``.

The table is split reproducibly (``seed``) into a training part and a held-out part
(``test_fraction``); with a person column (``person=`` or a spec entry ``"person"``), by
person: every row of a person on one side, and the fits protect persons
(:mod:`pgm_dp.prepare.persons`; release learners only: a record learner protects records).
For each ``epsilon`` the training part is prepared, and marginals selected and measured, once
(:func:`pgm_dp.table.fit.fit_table`); every release learner then fits the same noisy tables, so
the learners differ only in how they use them. A record
learner (PSGD, Zhang et al.'s, a non-private reference) fits the same prepared training
records on the same cliques, with what the preparation left of ``epsilon``
(:func:`record_budget`). The private
independent model (the product of the noisy one-way tables) is scored beside them.

Scores, per learner, on the user's full domain (every model expanded as the saved fit is,
:func:`~pgm_dp.table.synth.expand_model`): the held-out mean log-likelihood per record (nats)
and the workload error, the mean total-variation distance between the model's and the
held-out records' 2-way marginals.
Held-out records with values the preparation cannot encode (a category never declared
nor seen in training) are left out and counted. The scores read the held-out records
without privacy: a comparison is for choosing a method, not a release.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._progress import step
from ..errors import DomainError
from ..table.check import independent_model

__all__ = [
    "DataComparison",
    "compare_on_table",
    "record_budget",
    "split_table",
    "heldout_scores",
    "print_table",
]


@dataclass(frozen=True)
class DataComparison:
    """``runs``: one row per (epsilon, learner) with ``loglik_test``, ``tvd2_test``,
    ``seconds`` (CPU time of the learner's fit), ``compiles`` (the learner's first fit of
    the comparison, whose seconds include JAX's compilation: compare the later rows for the
    time of a fit), ``n_test`` (held-out records scored), ``skipped`` (why a learner was not
    fitted: the prepared domain is outside its model family, e.g. Zhang et al.'s learners
    need two states per variable; empty when fitted);
    ``csv`` and ``plot``: the files written (or ``None``)."""

    runs: pd.DataFrame
    csv: Path | None = None
    plot: Path | None = None


def split_table(df: pd.DataFrame, test_fraction: float, seed: int, person=None) -> tuple:
    """``(train, test)``: a fixed permutation of the rows by ``seed``; with a ``person``
    column, of the persons (``test_fraction`` of them held out with all their rows; missing
    ids count as one person)."""
    from ..errors import DataValidationError
    from ..prepare.columns import missing_mask

    if not 0 < test_fraction < 1:
        raise DataValidationError(f"test_fraction must be in (0, 1), got {test_fraction!r}")
    if person is None:
        ids = np.arange(len(df))
    else:
        ids = pd.factorize(df[person].astype(object), use_na_sentinel=True)[0]
        ids[missing_mask(df[person])] = ids.max() + 1
    units = int(ids.max()) + 1 if len(ids) else 0
    n_test = int(round(units * test_fraction))
    if n_test < 1 or n_test >= units:
        what = "persons" if person is not None else "records"
        raise DataValidationError(f"too few {what} to hold {test_fraction:g} of them out")
    perm = np.random.default_rng(seed).permutation(units)
    held = np.zeros(units, dtype=bool)
    held[perm[:n_test]] = True
    if person is None:
        return df.iloc[perm[n_test:]], df.iloc[perm[:n_test]]
    return df[~held[ids]], df[held[ids]]


def _encodable(plan, test: pd.DataFrame) -> tuple[Any, int]:
    """Full-domain codes of the held-out rows the plan can encode, and how many were left
    out."""
    from ..table.synth import full_codes

    keep = np.ones(len(test), dtype=bool)
    for c in plan.columns:
        col = test[c.name]
        try:
            c.encode_full(col)
        except ValueError:
            keep &= np.asarray([_one_ok(c, v) for v in col], dtype=bool)
    return full_codes(plan, test[keep]), int((~keep).sum())


def _one_ok(c, value) -> bool:
    try:
        c.encode_full(pd.Series([value], dtype=object if isinstance(value, str) else None))
    except ValueError:
        return False
    return True


def heldout_scores(model, test_codes: Any) -> dict:
    """Held-out mean log-likelihood and mean 2-way TVD of ``model`` (codes on its domain)."""
    from ..tables import contingency_table

    dom = model.domain
    logp = np.asarray(model.log_prob(test_codes))
    test_codes = dom.encode(test_codes)  # an array (codes stay codes)
    pairs = list(combinations(dom.attributes, 2))
    tvd = []
    tables = model.marginals(pairs)
    for pair in pairs:
        p = np.asarray(tables[tuple(pair)])
        t = contingency_table(test_codes, [dom.index(v) for v in pair], dom.sizes(pair))
        tvd.append(0.5 * np.abs(np.asarray(p) - t / len(test_codes)).sum())
    return {"loglik_test": float(np.mean(logp)), "tvd2_test": float(np.mean(tvd))}


def compare_on_table(
    df: pd.DataFrame,
    spec: Mapping | None = None,
    *,
    epsilons: Sequence[float],
    learners: Sequence[str] = ("naive", "cgm"),
    delta: float | None = None,
    seed: int = 0,
    test_fraction: float = 0.2,
    out_dir: str | Path | None = None,
    plot: bool | None = None,
    progress: Any = None,
    **fit_options: Any,
) -> DataComparison:
    """Compare ``learners`` (any registered ones) on ``df`` (module docstring) at each
    ``epsilon`` (pure ε-DP, or ``(ε, delta)``); ``fit_options`` go to
    :func:`~pgm_dp.table.fit.fit_table`. Release learners fit the release of
    :func:`~pgm_dp.table.fit.fit_table`; a record learner (PSGD, ...) fits the same prepared
    training codes and the same cliques with its own budget: what the preparation left of
    ``epsilon`` (:func:`record_budget`). The fit's held-out check against the independent
    model (:mod:`pgm_dp.table.check`) is off unless ``check_share`` is given: each
    learner is scored as it is, beside the independent model's row. Writes
    ``compare_data.csv`` (and, when matplotlib is present or ``plot=True``,
    ``compare_data.png``) to ``out_dir``."""
    from .. import learners as registry
    from ..errors import PrivacyParameterError
    from ..models import MarkovRandomField
    from ..prepare.persons import with_person
    from ..privacy import ApproxDP, PureDP
    from ..table.fit import fit_table
    from ..table.synth import expand_model

    specs = [registry.get(name) for name in learners]
    driver = next((s.name for s in specs if s.kind == "release"), "naive")
    spec, person = with_person(spec, fit_options.pop("person", None))
    if person is not None and any(s.kind == "records" and s.private for s in specs):
        raise PrivacyParameterError(
            "with a person column, compare release learners: a record "
            "learner protects records, not persons"
        )
    train, test = split_table(df, test_fraction, seed, person)
    rows = []
    total = len(epsilons) * len(specs)
    step("compare: fits", 0, total)
    for k, eps in enumerate(epsilons):
        budget = PureDP(eps) if delta is None else ApproxDP(eps, delta)
        tf = fit_table(
            train,
            spec,
            budget=budget,
            rng=seed + 1 + k,
            learner=driver,
            **{"check_share": 0, **fit_options},
        )
        codes, left_out = _encodable(tf.plan, test)
        mrf = MarkovRandomField(tf.plan.domain, tf.release.cliques)
        models = [("independent", expand_model(independent_model(tf.release), tf.plan), 0.0)]
        skipped = {}
        for s in specs:
            start = time.process_time()
            step(
                "compare: fits",
                k * len(specs) + len(models) - 1 + len(skipped),
                total,
                f"{s.name} at epsilon {eps:g}",
            )
            if s.name == driver:
                models.append((s.name, tf.fit.model, tf.report["fit_cpu_s"]))
                continue
            try:
                model = _fit_other(s, tf, mrf, train, budget, fit_options, [seed, k, len(models)])
            except DomainError as err:  # the prepared domain is outside its model family
                skipped[s.name] = str(err)
                continue
            models.append((s.name, expand_model(model, tf.plan), time.process_time() - start))
        step("compare: fits", (k + 1) * len(specs), total, f"epsilon {eps:g} done")
        rows += _score_rows(eps, k, models, skipped, codes, left_out, progress)
    return _finish(pd.DataFrame(rows), out_dir, plot)


def _score_rows(eps, k, models, skipped, codes, left_out, progress) -> list[dict]:
    """The rows of one ``epsilon``: each fitted model's held-out scores
    (:func:`heldout_scores`), then the learners skipped, with why."""
    rows = []
    for name, model, seconds in models:
        row = {"epsilon": eps, "learner": name, **heldout_scores(model, codes)}
        rows.append(
            {
                **row,
                "seconds": seconds,
                "compiles": k == 0,
                "n_test": len(codes),
                "left_out": left_out,
                "skipped": "",
            }
        )
    for name, why in skipped.items():
        rows.append(
            {
                "epsilon": eps,
                "learner": name,
                "loglik_test": np.nan,
                "tvd2_test": np.nan,
                "seconds": np.nan,
                "compiles": False,
                "n_test": len(codes),
                "left_out": left_out,
                "skipped": why,
            }
        )
        if progress is not None:
            progress(rows[-1])
    return rows


def _fit_other(spec, tf, mrf, train, budget, fit_options, seed) -> Any:
    """The model of a learner other than the driver: a release learner on ``tf``'s release,
    a record learner on the prepared training records with :func:`record_budget`."""
    if spec.kind == "release":
        return spec.make().fit(tf.release, mrf).model
    b = record_budget(spec, tf.plan, budget, len(train), fit_options)
    gen = np.random.default_rng(seed)
    return spec.make().fit(tf.plan.encode(train), mrf, budget=b, rng=gen).model


def record_budget(spec, plan, budget, n: int, fit_options: Mapping) -> Any:
    """The budget of record learner ``spec`` in a comparison at ``budget``: the share of it
    that the preparation ``plan`` left, ``ε (1 - s)`` with ``s`` the share the preparation
    spent (of ε, or of the ρ an ``(ε, δ)`` budget converts to), in the learner's notion
    (:func:`pgm_dp.compare.graphs.budget_for`: PSGD's ``(ε, 1/N)``; the user's δ when one is
    given). ``None`` for a non-private reference. Its structure, the cliques the release path
    selected, is not charged to it: a comparison is for choosing a method, not a release."""
    from ..privacy import ApproxDP
    from ..select.plan import one_way_share, split_budget
    from .graphs import budget_for

    if not spec.private:
        return None
    share = fit_options.get("prepare_share") or one_way_share(budget)
    notion, amount, _, _ = split_budget(budget, share)
    spent = plan.budget_spent  # None: nothing spent
    left = 1.0 - (0.0 if spent is None else spent.amount) / amount
    b = budget_for(spec, budget.epsilon * left, n)
    if hasattr(b, "delta") and hasattr(budget, "delta"):  # (ε, δ) both: the user's δ
        return ApproxDP(b.epsilon, budget.delta)
    return b


def _finish(runs: pd.DataFrame, out_dir, plot) -> DataComparison:
    from ..plotting import have_matplotlib

    if out_dir is None:
        return DataComparison(runs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    csv = out / "compare_data.csv"
    runs.to_csv(csv, index=False)
    png = None
    if plot or (plot is None and have_matplotlib()):
        png = plot_table(runs, out / "compare_data.png")
    return DataComparison(runs, csv, png)


def plot_table(runs: pd.DataFrame, path: str | Path) -> Path:
    """Held-out log-likelihood and 2-way TVD per learner against epsilon."""
    from ..plotting import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for name, g in runs.groupby("learner", sort=False):
        g = g.sort_values("epsilon")
        axes[0].plot(g.epsilon, g.loglik_test, marker="o", label=name)
        axes[1].plot(g.epsilon, g.tvd2_test, marker="o", label=name)
    for ax, title in zip(axes, ("held-out log-likelihood", "mean 2-way TVD"), strict=True):
        ax.set_xscale("log")
        ax.set_xlabel("epsilon")
        ax.set_title(title)
    axes[1].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)


def print_table(result: DataComparison) -> str:
    """The comparison as a table (one line per learner and epsilon)."""
    runs = result.runs
    cols = ["epsilon", "learner", "loglik_test", "tvd2_test", "seconds"]
    why = runs["skipped"].fillna("") if "skipped" in runs else pd.Series("", index=runs.index)
    text = runs.loc[why == "", cols].to_string(index=False, float_format=lambda x: f"{x:.4g}")
    text += (
        "\n(seconds: CPU time of each fit; a learner's first epsilon includes JAX's "
        "compilation, the later ones are the time of a fit)"
    )
    for name, reason in dict(zip(runs.learner[why != ""], why[why != ""], strict=True)).items():
        text += f"\n{name}: not fitted: {reason}"
    return text
