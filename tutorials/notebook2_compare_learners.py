# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Notebook 2: naive MLE vs CGM-EM vs PSGD on one budget
#
# Bernstein et al. (2017, Sec. 4.1): data drawn from a known third-order chain, the clique
# tables released once with the Laplace mechanism, Naive MLE and CGM-EM fitted to the same
# release, PSGD trained on the records at `(ε, 1/N)`. The score is `KL(true || learned)`.
#
# The test suite runs this with small settings; `PGM_DP_TUTORIAL_FULL=1` runs the paper's
# sizes (T = 10 variables of k = 10 states, N = 100,000; a few minutes).

# %%
import os
import tempfile

import matplotlib.pyplot as plt

from pgm_dp.compare import run_compare

FULL = os.environ.get("PGM_DP_TUTORIAL_FULL") == "1"
SIZE = dict(T=10, k=10, N=100_000) if FULL else dict(T=4, k=3, N=2_000)
LEARNERS = ["random", "nonprivate", "naive", "cgm", "psgd"]
out = tempfile.mkdtemp()

# %% [markdown]
# ## 1. One budget, every learner on the same release

# %%
result = run_compare(
    epsilons=(0.1, 1.0), learners=LEARNERS, progress=False, out_dir=out, seed=0, **SIZE
)
print(result.summary)

# %% [markdown]
# ## 2. Reading the plot
# KL vs ε, log-log. *Random* is the floor to beat and *Non-private MLE* the ceiling. Naive
# MLE treats noisy tables as true, so its error grows fast as ε shrinks; CGM-EM models the
# noise and stays closer to the non-private fit; PSGD pays for privacy on every gradient step
# and is competitive only with many records.

# %%
img = plt.imread(result.plot)
plt.figure(figsize=(6, 4.5))
plt.imshow(img)
plt.axis("off")

# %% [markdown]
# ## 3. Time per fit
# The same run records each fit's seconds; CGM-EM's E-steps make it slower than Naive MLE.

# %%
result.runs.groupby("learner")["seconds"].median().round(2)

# %% [markdown]
# ## 4. Zhang et al.'s Frank-Wolfe learners on binary data
# Zhang et al. (2020) learn Ising models — binary variables with pairwise interactions — from
# the records, with private Frank-Wolfe (their Alg. 2). They are registered like the other
# learners (`zhang_ising`, and `zhang_ising_np` without noise), so the same comparison runs
# them; they need two states per variable, hence a binary chain here. They spend their own
# budget in zero-concentrated DP: at each ε they get the largest ρ that is `(ε, 1/N)`-DP.
#
# Their guarantees are for models of bounded width (the `lam` option, 1 by default): the
# estimate is kept in an L1 ball of that size. The chain's Dirichlet(1) potentials are wider,
# so even the non-private version stays well above the non-private MLE here, and privacy
# costs the private one more. They suit sparse Ising models whose width is known.

# %%
BINARY = dict(T=6, k=2, N=20_000) if FULL else dict(T=4, k=2, N=2_000)
zhang = run_compare(
    epsilons=(0.1, 1.0),
    learners=["nonprivate", "naive", "cgm", "zhang_ising", "zhang_ising_np"],
    progress=False,
    out_dir=tempfile.mkdtemp(),
    seed=0,
    **BINARY,
)
print(zhang.summary)
