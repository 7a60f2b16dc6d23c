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
# # Notebook 1: a custom MRF fitted privately on UCI Adult
#
# We declare a model by hand (and the same structure through pgmpy), fit it privately to a
# **labelled** DataFrame of the UCI Adult data, let the data choose the cliques privately
# (MST, McKenna et al. 2021), and save and reload the fitted model.
#
# The test suite runs this notebook with small settings; set `PGM_DP_TUTORIAL_FULL=1` for
# the full run (all records, every attribute below).

# %%
import os
import tempfile

import numpy as np

import pgm_dp
from pgm_dp import Domain, MarkovRandomField, PureDP
from pgm_dp.compare.metrics import log_likelihood
from pgm_dp.io import load, save
from pgm_dp.learners import CGMEM, NaiveMLE

FULL = os.environ.get("PGM_DP_TUTORIAL_FULL") == "1"
COLUMNS = ["sex", "race", "relationship", "marital-status", "income>50K"]
if FULL:
    COLUMNS += ["workclass", "education-num", "occupation"]

# %% [markdown]
# ## 1. A labelled DataFrame and its public domain
# The shipped Adult file holds integer codes. We give some attributes readable labels, as
# a real data owner would declare them from the public code book, not from the data.

# %%
codes, coded = pgm_dp.load_adult(COLUMNS)
labels = {
    "sex": ["sex-0", "sex-1"],
    "income>50K": ["<=50K", ">50K"],
    "race": [f"race-{i}" for i in range(5)],
}
domain = Domain(coded.attributes, coded.shape, labels)
adult = codes.copy()
for name, labs in labels.items():
    adult[name] = np.asarray(labs, dtype=object)[codes[name].to_numpy()]
if not FULL:
    adult = adult.sample(8000, random_state=0).reset_index(drop=True)
adult.head()

# %% [markdown]
# ## 2. Declare a model by hand, and the same structure from pgmpy

# %%
cliques = [("sex", "relationship"), ("relationship", "marital-status"),
           ("marital-status", "income>50K"), ("race", "income>50K")]  # fmt: skip
model = MarkovRandomField(domain, cliques)
print(model)

from pgmpy.models import DiscreteMarkovNetwork  # noqa: E402

net = DiscreteMarkovNetwork(cliques)
same = MarkovRandomField.from_pgmpy(net, domain=domain)
print("same cliques from pgmpy:", set(map(frozenset, same.cliques)) == set(map(frozenset, cliques)))

# %% [markdown]
# ## 3. Fit it privately at ε = 1 (labels are encoded through the domain)

# %%
acct = pgm_dp.Accountant(PureDP(1.0))
release = pgm_dp.release_marginals(adult, model, budget=PureDP(1.0), rng=0, accountant=acct)
fit = NaiveMLE().fit(release, model)
print(acct.report())
print("mean log-likelihood per record:", round(log_likelihood(fit.model, adult), 4))

# %% [markdown]
# ## 4. Let the data choose the cliques privately (MST), then fit CGM-EM
# One third of ε picks a spanning tree of pairs; the rest releases the chosen pairs.

# %%
sel = pgm_dp.select_cliques(adult, PureDP(1.0 / 3), domain, rng=1)
print("chosen pairs:", sel.cliques)
tree = MarkovRandomField(domain, sel.cliques)
release2 = pgm_dp.release_marginals(adult, tree, budget=PureDP(2.0 / 3), rng=2)
fit2 = CGMEM().fit(release2, tree)
print("mean log-likelihood per record:", round(log_likelihood(fit2.model, adult), 4))

# %% [markdown]
# ## 5. Save and reload
# A model is saved as JSON plus arrays; the labels travel with its domain.

# %%
path = save(fit2.model, os.path.join(tempfile.mkdtemp(), "adult_mst.npz"))
again = load(path)
print(path.name, "reloaded; same domain:", again.domain == domain)
again.domain.decode(again.sample(3, rng=0).to_numpy())  # labels back
