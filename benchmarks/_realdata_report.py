"""The summary of ``bench_realdata.py``'s runs: a Markdown table (medians over seeds, ratios
pgm_dp / MST and pgm_dp / AIM) and a plot of the mean 2-way TVD against ε."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

__all__ = ["summarise", "write_report"]

METRICS = ["tvd2", "tvd3", "tvd2_sample", "tvd3_sample", "sample_ratio", "clf_acc",
           "clf_acc_real", "loglik_test", "loglik_indep", "cpu_s", "maxrss_mb",
           "score_s"]  # fmt: skip
HEAD = {"tvd2": "2-way TVD", "tvd3": "3-way TVD", "tvd2_sample": "2-way TVD, sample",
        "tvd3_sample": "3-way TVD, sample", "sample_ratio": "sample / model (2-way)",
        "clf_acc": "accuracy, synthetic", "clf_acc_real": "accuracy, real",
        "loglik_test": "test log-lik.", "loglik_indep": "its indep. log-lik.",
        "cpu_s": "CPU s", "maxrss_mb": "peak MB",
        "score_s": "scoring s"}  # fmt: skip
#: (metric, label, pgm_dp's method, peer): the ratio columns. ``pgmdp-zcdp`` is the default
#: fit at the peers' privacy notion, (ε, 1e-9) through zCDP.
RATIOS = [(m, lab, ours, peer) for m, lab in (("tvd2", "2-way TVD"), ("tvd3", "3-way TVD"))
          for ours, peer in (("pgmdp", "mst"), ("pgmdp", "aim"), ("pgmdp-zcdp", "aim"),
                             ("pgmdp", "independent"))]  # fmt: skip
RATIOS += [("cpu_s", "CPU", "pgmdp", "mst"), ("cpu_s", "CPU", "pgmdp", "aim")]
RATIOS += [("clf_acc", "accuracy", ours, peer) for ours, peer in
           (("pgmdp", "mst"), ("pgmdp", "aim"), ("pgmdp-zcdp", "aim"))]  # fmt: skip
NAMES = {"mst": "MST", "aim": "AIM", "independent": "indep."}


def summarise(rows: list[dict]) -> pd.DataFrame:
    """Medians over seeds of the successful runs (the last row of a repeated run counts)."""
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    df = df[df["status"] == "ok"].copy()
    df["eps"] = df["eps"].astype(float)
    df = df.drop_duplicates(["data", "eps", "seed", "method"], keep="last")
    for m in METRICS:  # columns of an older layout are blank
        if m in df.columns:
            df[m] = pd.to_numeric(df[m], errors="coerce")
    df["sample_ratio"] = df["tvd2_sample"] / df["tvd2"]
    for m in METRICS:
        if m not in df.columns:
            df[m] = float("nan")
    med = df.groupby(["data", "eps", "method"])[METRICS].median()
    med["seeds"] = df.groupby(["data", "eps", "method"]).size()
    gain = df["loglik_test"] - df["loglik_indep"]  # blank for the peers
    med["loglik_gain"] = gain.groupby([df["data"], df["eps"], df["method"]]).min()
    return med.reset_index()


def _fmt(v, metric: str) -> str:
    if pd.isna(v):
        return ""
    if metric.startswith("tvd") or metric.startswith("clf"):
        return f"{v:.4f}"
    if metric == "sample_ratio":
        return f"{v:.2f}"
    if metric.startswith("loglik"):
        return f"{v:.3f}"
    return f"{v:,.0f}" if v >= 10 else f"{v:.1f}"


def markdown(med: pd.DataFrame) -> str:
    """The medians' table; its last column, the held-out log-likelihood minus that of the
    fit's own private independent model, is the smallest over the seeds (every row, not the
    median, must stay above that baseline)."""
    cols = ["data", "ε", "method", "seeds"] + [HEAD[m] for m in METRICS]
    cols += ["log-lik. − its indep., min"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in med.iterrows():
        cells = [r["data"], f"{r['eps']:g}", r["method"], str(int(r["seeds"]))]
        cells += [_fmt(r[m], m) for m in METRICS]
        cells.append(_fmt(r["loglik_gain"], "loglik_gain"))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def ratio_table(med: pd.DataFrame) -> str:
    """pgm_dp's fits over the peers, per (data, ε): ratios of the medians (below 1: pgm_dp
    lower; :data:`RATIOS`) and the difference of the held-out log-likelihoods (above 0:
    pgm_dp higher). A blank: one of the two has no successful run in that cell."""
    head = ["data", "ε"] + [f"{lab} {ours}/{NAMES[peer]}" for _, lab, ours, peer in RATIOS]
    head += ["log-lik. pgmdp − MST", "log-lik. pgmdp − AIM"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (data, eps), g in med.groupby(["data", "eps"]):
        by = g.set_index("method")
        cells = [data, f"{eps:g}"]
        for metric, _, ours, peer in RATIOS:
            ok = ours in by.index and peer in by.index
            value = by.loc[ours, metric] / by.loc[peer, metric] if ok else float("nan")
            cells.append(f"{value:.2f}" if not pd.isna(value) else "")
        for peer in ("mst", "aim"):
            ok = "pgmdp" in by.index and peer in by.index
            diff = by.loc["pgmdp", "loglik_test"] - by.loc[peer, "loglik_test"] if ok else None
            cells.append(f"{diff:+.3f}" if ok else "")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(med: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = sorted(med["data"].unique())
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.6), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        sub = med[med["data"] == name]
        for k, method in enumerate(sorted(med["method"].unique())):
            g = sub[sub["method"] == method].sort_values("eps")
            ax.plot(g["eps"], g["tvd2"], marker="o", label=method, color=f"C{k}")
        ax.set(xscale="log", xlabel="ε", ylabel="mean 2-way TVD (model)", title=name)
        ticks = sorted(sub["eps"].unique())
        ax.minorticks_off()
        ax.set_xticks(ticks, [f"{e:g}" for e in ticks])
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_report(rows: list[dict], out: Path) -> str:
    """Write ``summary.md`` and ``tvd2.png`` into ``out``; return the Markdown."""
    med = summarise(rows)
    if med.empty:
        return "no successful runs"
    text = markdown(med) + "\n\n" + ratio_table(med) + "\n"
    (out / "summary.md").write_text(text)
    plot(med, out / "tvd2.png")
    return text
