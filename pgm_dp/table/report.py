"""The report of a private fit of a table (:func:`pgm_dp.table.fit.fit_table`).

:func:`build_report` says what was selected, the budget of each step (the accountant's
charges, grouped) and the expected error, and checks the fitted model against the
**private independent model**: the product of the noisy one-way tables, which every fit
has already paid for.

How the check is judged (post-processing only, no extra budget): every table the fit used
is a noisy measurement ``y_C = N·p(C) + noise`` with known variance ``v_C``. A model ``q``
is scored by ``S(q) = sum_C ||N̂ q(C) - y_C||² / v_C`` (``N̂`` the release's estimated
number of records): minus twice the Gaussian log-likelihood of the measurements, up to a
constant, i.e. how well ``q`` explains what was measured. The fitted model was fitted to
the noise of every ``y_C`` and the independent model only to the one-way ones, so each is
penalised by twice its number of free parameters ``k`` (Akaike's ``S + 2 k``; Mallows'
``C_p``): when ``S(fitted) + 2 k`` is not below the independent model's, the fit is no
better than the independent model, :class:`WorseThanIndependentWarning` is raised (a
Python warning; the command line prints it too) and
:func:`~pgm_dp.table.check.apply_misfit_check` returns the independent model. Released
quantities only, so this check runs at every budget and ``N``. That score cannot see
the unselected marginals; the held-out check of :mod:`pgm_dp.table.check` (a share of
the budget) can, and its verdict is reported and warned the same way (:func:`warn_workload_check`).
The guarantee is stated per unit protected: one record, or one person with at most ``K``
records when the preparation has a person column (:mod:`pgm_dp.prepare.persons`).
Expected error: for each
measured table the noise's expected total variation ``n_C · E|noise| / (2 N̂)`` (``n_C``
cells), the error a table would have if used as is.
"""

from __future__ import annotations

import math
import re
import warnings
from typing import Any

import numpy as np

__all__ = [
    "WorseThanIndependentWarning",
    "build_report",
    "format_report",
    "independent_check",
    "warn_workload_check",
]


class WorseThanIndependentWarning(UserWarning):
    """The fitted model explains the noisy measurements worse than the private independent
    model (the product of the noisy one-way tables): see :mod:`pgm_dp.table.report`."""


_GROUPS = [
    (r"^prepare: quantile", "prepare: private quantiles (bins)"),
    (r"^prepare: one-way", "prepare: one-way marginals (compression; reused by the fit)"),
    (r"^aim round \d+: select", "AIM: selections (exponential mechanism)"),
    (r"^aim round \d+: measure", "AIM: measurements of the selected marginals"),
    (r"^select_cliques: one-way", "MST: one-way marginals"),
    (r"^select_cliques: edge", "MST: selections (exponential mechanism)"),
    (r"^mst: measure", "MST: measurements of the selected pairs"),
    (r"^fit check", "fit check: workload error against the independent model (held out)"),
]


def _steps(accountant) -> list[dict]:
    """The accountant's charges grouped by step, each group's cost composed."""
    from ..privacy import Accountant

    groups: dict[str, list] = {}
    for ch in accountant.charges:
        name = next((g for pat, g in _GROUPS if re.match(pat, ch.what)), ch.what)
        groups.setdefault(name, []).append(ch)
    out = []
    for name, charges in groups.items():
        acc = Accountant(accountant.total)
        for ch in charges:
            acc.charge(ch.cost, what=ch.what, mechanism=ch.mechanism)
        spent, whole = acc.spent.native(), accountant.total.native()
        share = spent.amount / whole.amount if spent.notion == whole.notion else None
        out.append(
            {
                "step": name,
                "charges": len(charges),
                "cost": str(acc.spent),
                "notion": spent.notion,
                "amount": spent.amount,
                "share": share,
            }
        )
    return out


def free_parameters(domain, cliques) -> int:
    """The number of free parameters of the hierarchical log-linear model on ``cliques``:
    ``sum_U prod_{a in U} (k_a - 1)`` over the distinct non-empty subsets ``U`` of the
    cliques (the dimension of its marginal polytope's affine hull)."""
    from itertools import combinations

    subsets = {
        s
        for c in cliques
        for r in range(1, len(c) + 1)
        for s in combinations(sorted(map(domain.index, c)), r)
    }
    sizes = domain.shape
    return int(sum(math.prod(sizes[i] - 1 for i in s) for s in subsets))


def independent_check(model, release, fitted_cliques=None) -> dict | None:
    """``S(fitted)``, ``S(independent)`` (module docstring), their penalised forms and the
    verdict, or ``None`` when some variable has no one-way table to build the independent
    model from. The verdict compares Akaike's ``S + 2 k`` (AIC on the measurements'
    Gaussian likelihood; Mallows' ``C_p`` on the noise-weighted squared error): ``k`` the
    model's free parameters (:func:`free_parameters` of ``fitted_cliques``, default the
    release's cliques; the independent model's: its one-way tables'). The fitted model was
    fitted to the noise of every table, which lowers ``S(fitted)`` by about ``2 k`` on
    average (the covariance penalty of Stein's unbiased risk estimate, a fit linear in
    the noise), so the unpenalised comparison favours it; the penalised one estimates which
    model is nearer the true tables. Released quantities only (post-processing)."""
    from ..select.aim import model_marginals
    from .check import one_way_probabilities

    probs = one_way_probabilities(release)
    if probs is None:
        return None
    n_hat = float(release.total)
    cliques = list(release.cliques)
    fitted = model_marginals(model, cliques)  # NumPy calibration: nothing compiled
    s_fit = s_ind = 0.0
    for c, q in zip(cliques, fitted, strict=True):
        y = np.asarray(release.noisy[c], float)
        v = max(release.noise[c].variance, 1e-12)
        ind = probs[c[0]]
        for a in c[1:]:
            ind = np.multiply.outer(ind, probs[a])
        s_fit += float(np.sum((n_hat * q - y) ** 2)) / v
        s_ind += float(np.sum((n_hat * ind - y) ** 2)) / v
    dom = release.domain
    k_fit = free_parameters(dom, cliques if fitted_cliques is None else fitted_cliques)
    k_ind = free_parameters(dom, [(a,) for a in dom.attributes])
    a_fit, a_ind = s_fit + 2 * k_fit, s_ind + 2 * k_ind
    return {
        "fitted": s_fit,
        "independent": s_ind,
        "parameters_fitted": k_fit,
        "parameters_independent": k_ind,
        "aic_fitted": a_fit,
        "aic_independent": a_ind,
        "worse_than_independent": a_fit >= a_ind,
    }


def build_report(model, release, plan, chosen, accountant, learner: str, guarantee=None) -> dict:
    """The fit's report (module docstring) as a JSON-ready dict; warns
    :class:`WorseThanIndependentWarning` when the check fails."""
    from .check import expected_abs_noise

    n_hat = float(release.total)
    noise_tvd = {
        ",".join(map(str, c)): release.domain.size(c)
        * expected_abs_noise(release.noise[c])
        / (2 * n_hat)
        for c in release.cliques
    }
    multi = [v for k, v in noise_tvd.items() if "," in k]
    check = independent_check(model, release)
    report: dict[str, Any] = {
        "learner": learner,
        "selection": "aim" if hasattr(chosen, "rounds") else "mst",
        "selected": [list(map(str, c)) for c in chosen.cliques],
        "rounds": len(getattr(chosen, "rounds", ())) - 1 if hasattr(chosen, "rounds") else None,
        "n_estimate": n_hat,
        "domain": {
            str(a): int(s) for a, s in zip(plan.domain.attributes, plan.domain.shape, strict=True)
        },
        "steps": _steps(accountant),
        "budget_spent": str(accountant.spent),
        "guarantee": f"{guarantee if guarantee is not None else accountant.total} per "
        f"{plan.privacy_unit}",
        "privacy_unit": plan.privacy_unit,
        "expected_error": {
            "noise_tvd_per_table": noise_tvd,
            "mean_noise_tvd_multiway": float(np.mean(multi)) if multi else None,
            "mean_noise_tvd_one_way": float(
                np.mean([v for k, v in noise_tvd.items() if "," not in k])
            ),
        },
        "independent_check": check,
        "nonprivate_reads": list(plan.nonprivate_reads),
    }
    if multi and check is not None and check["worse_than_independent"]:  # else the same model
        warnings.warn(
            f"the fitted model ({learner}) explains the noisy measurements no better than the "
            f"private independent model (misfit S + 2 x parameters, squared error / noise "
            f"variance summed over the measured cells: {check['aic_fitted']:.4g} >= "
            f"{check['aic_independent']:.4g}); the independent model is returned instead; "
            "prefer a larger budget, --selection mst or another --learner",
            WorseThanIndependentWarning,
            stacklevel=3,
        )
    return report


def warn_workload_check(check: dict, learner: str) -> None:
    """Warn :class:`WorseThanIndependentWarning` when the held-out check
    (:mod:`pgm_dp.table.check`) found the fitted model worse on the workload."""
    if check["worse_than_independent"]:
        warnings.warn(
            f"the fitted model ({learner}) is worse on the workload than the private "
            f"independent model (held-out check: mean total variation {check['gap']:+.4f} "
            f"± {check['noise_scale']:.4f} noise); the independent model is returned instead",
            WorseThanIndependentWarning,
            stacklevel=3,
        )


def _check_line(check: dict) -> str:
    """The report line of the held-out workload check."""
    verdict = "WORSE than" if check["worse_than_independent"] else "no worse than"
    line = (
        f"Workload check ({_budget_words(str(check['cost']))}, held out): the fitted model is "
        f"{verdict} the private independent model on the {check['workload_marginals']} "
        "workload marginals (mean total variation, fitted minus independent: "
        f"{check['gap']:+.4f}, noise scale {check['noise_scale']:.4f})"
    )
    return line + ("; the independent model was returned" if check["fallback"] else "")


def _budget_words(text: str) -> str:
    """A budget's repr (``PureDP(epsilon=1.0)``) as ``ε = 1``, four significant digits."""
    names = {"epsilon": "ε", "rho": "ρ", "delta": "δ"}
    pairs = re.findall(r"(epsilon|rho|delta)=([-+.\deE]+)", text)
    return ", ".join(f"{names[k]} = {float(v):.4g}" for k, v in pairs) or text


def _step_line(s: dict) -> str:
    """One step of the budget: its share of the total, its amount, its draws."""
    unit = {"pure": "ε", "zcdp": "ρ"}.get(s.get("notion"), "")
    amount = f"{unit} = {s['amount']:.4g}" if "amount" in s else _budget_words(s["cost"])
    share = "" if s.get("share") is None else f"{100 * s['share']:>6.4g} % "
    draws = f"{s['charges']} draw" + ("s" if s["charges"] != 1 else "")
    return f"  {share}{s['step']} ({amount}, {draws})"


def format_report(report: dict) -> str:
    """The report as lines for a terminal."""
    how = "AIM" if report["selection"] == "aim" else "MST"
    lines = [f"Selected by {how}: {len(report['selected'])} marginals, one per line:"]
    lines += [f"  {i:>3}. {', '.join(c)}" for i, c in enumerate(report["selected"], 1)]
    lines.append(
        f"Privacy budget: the guarantee is {_budget_words(report['guarantee'])}; per step, "
        "its share of the total (exact values in the saved fit's report):"
    )
    lines += [_step_line(s) for s in report["steps"]]
    if report.get("privacy_unit") == "record":
        lines.append(
            "  (the budget protects one record: a person with k records is protected at k "
            "times it; declare a person column to protect persons)"
        )
    err = report["expected_error"]
    multi = err["mean_noise_tvd_multiway"]
    lines.append(
        f"Expected error (noise of the measured tables, total variation): one-way "
        f"{err['mean_noise_tvd_one_way']:.4f}"
        + ("" if multi is None else f", selected marginals {multi:.4f}")
        + f"; N, the number of records, about {report['n_estimate']:,.0f}: estimated from all "
        "the noisy tables measured (the exact number is not released; an estimate from fewer "
        "tables differs a little)"
    )
    lines += [f"Note: {note}" for note in report.get("notes", ())]
    check = report["independent_check"]
    if check is not None:
        verdict = "NO BETTER than" if check["worse_than_independent"] else "better than"
        lines.append(
            f"Fit check (no extra budget): the model explains the measurements {verdict} the "
            f"private independent model (measurement misfit S, the sum over measured cells of "
            f"squared error / noise variance, plus twice the free parameters, lower is "
            f"better: {check['aic_fitted']:.4g} vs {check['aic_independent']:.4g})"
        )
    if report.get("workload_check") is not None:
        lines.append(_check_line(report["workload_check"]))
    return "\n".join(lines)
