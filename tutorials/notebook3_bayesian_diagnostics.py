# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Notebook 3: Bayesian diagnostics of a private release
#
# A release is noisy clique tables plus the mechanism that made them. `pgm_dp.bayes` puts a
# NumPyro posterior over the model's log-potentials given the release: the true counts are
# integrated out by the collective graphical model's CLT and the release follows its actual
# mechanism (Laplace noise as an exact scale mixture of normals). The posterior is an ArviZ
# `xarray.DataTree` and the diagnostics are ArviZ's (`arviz_stats`); the plots need matplotlib
# (the `plot` extra).
#
# The test suite runs this with small settings; `PGM_DP_TUTORIAL_FULL=1` uses more records
# and draws (a few minutes).

# %%
import os
import tempfile

import arviz_stats
import matplotlib.pyplot as plt
import numpy as np

import pgm_dp
from pgm_dp import PureDP, release_marginals
from pgm_dp.bayes import plot_check, posterior, predictive_check
from pgm_dp.learners import NaiveMLE
from pgm_dp.models import MarkovRandomField

FULL = os.environ.get("PGM_DP_TUTORIAL_FULL") == "1"
N, DRAWS, WARMUP = (20_000, 2000, 1000) if FULL else (2_000, 400, 300)
out = tempfile.mkdtemp()

# %% [markdown]
# ## 1. A small chain and one private release (ε = 0.1)

# %%
dom = pgm_dp.Domain(["A", "B", "C", "D"], [2, 2, 2, 2])
cliques = [("A", "B"), ("B", "C"), ("C", "D")]
rng = np.random.default_rng(0)
truth = MarkovRandomField(dom, cliques, [rng.normal(size=(2, 2)) for _ in cliques])
data = truth.sample(N, rng=1)
release = release_marginals(data, truth, budget=PureDP(0.1), rng=2)

# %% [markdown]
# ## 2. Noise-aware and naive posteriors
# `noise_aware=False` ignores the privacy noise: its intervals are too narrow at small ε.
# Both use the fast Laplace approximation (`method="laplace"`); section 3 samples with NUTS.

# %%
aware = posterior(release, truth, method="laplace", num_samples=DRAWS, rng=3)
naive = posterior(release, truth, method="laplace", num_samples=DRAWS, rng=3, noise_aware=False)
site = "marginal:B,C"
true_bc = truth.marginal(("B", "C"))
for name, idata in (("noise-aware", aware), ("naive", naive)):
    hdi = arviz_stats.hdi(idata.posterior[site], prob=0.9).values  # last axis: lower, upper
    print(f"{name:12s} 90% interval of P(B=1, C=1): {hdi[1, 1]}  (truth {true_bc[1, 1]:.3f})")

# %% [markdown]
# ## 3. NUTS, R-hat and effective sample sizes
# The Laplace method draws independent samples from a Gaussian, so there is nothing to
# diagnose. NUTS (the default method) runs Markov chains: run at least two and check that
# they agree (R-hat close to 1, below 1.01) and that the effective sample sizes (ESS, bulk
# and tail) are a few hundred or more before reading the intervals.
#
# Row names follow the posterior's variables: `marginal:B,C[i, j]` is the probability that
# `B` takes code `i` and `C` code `j` (the clique's variables in order; with labelled
# variables, the position of the label).

# %%
nuts = posterior(
    release, truth, method="nuts", num_warmup=WARMUP, num_samples=DRAWS, num_chains=2, rng=6
)
summary = arviz_stats.summary(
    nuts, var_names=["marginal:"], filter_vars="like", ci_kind="hdi", ci_prob=0.9
)
summary[["mean", "sd", "hdi90_lb", "hdi90_ub", "ess_bulk", "ess_tail", "r_hat"]]

# %%
rhat = arviz_stats.rhat(nuts, var_names=[site])[site]
ess = arviz_stats.ess(nuts, var_names=[site])[site]
print("largest R-hat:", round(float(rhat.max()), 3))
print("smallest bulk ESS:", round(float(ess.min())))
print("divergent transitions:", int(nuts.sample_stats["diverging"].sum()))

# %% [markdown]
# The trace of each chain for one cell: the chains should overlap and look like noise.

# %%
cell = np.asarray(nuts.posterior[site])[..., 1, 1]  # (chain, draw): P(B=1, C=1)
fig, ax = plt.subplots(figsize=(7, 2.4))
for c, trace in enumerate(cell):
    ax.plot(trace, lw=0.6, label=f"chain {c}")
ax.set(xlabel="draw", ylabel="P(B=1, C=1)", title=f"R-hat {float(rhat[1, 1]):.3f}")
ax.legend(fontsize=8)
fig.savefig(os.path.join(out, "trace.png"), dpi=90)
plt.show()

# %% [markdown]
# ## 4. Posterior predictive check of any fitted model
# Replicated releases through the same mechanism, compared with the observed one per clique.
# A model missing the B–C edge is flagged (a p-value near 0); the true structure is not.

# %%
full = predictive_check(release, NaiveMLE().fit(release, truth).model, replicates=200, rng=4)
cut = MarkovRandomField(dom, [("A", "B"), ("C", "D"), ("B",), ("C",)], None)
cut_rel = release_marginals(data, cut, budget=PureDP(0.1), rng=5)
missing = predictive_check(release, NaiveMLE().fit(cut_rel, cut).model, replicates=200, rng=4)
print("smallest p-value, true structure:", round(full.min_p, 3))
print("smallest p-value, B-C edge missing:", round(missing.min_p, 3))
plot_check(missing, os.path.join(out, "ppc.png"), title="B-C edge missing")
