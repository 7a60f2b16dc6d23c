"""Tutorial 1: declare an MRF, release its sufficient statistics privately, fit, compare.

Run with ``python tutorials/01_declare_release_fit.py`` after ``pip install .``.
"""

import numpy as np

import pgm_dp
from pgm_dp import Domain, MarkovRandomField
from pgm_dp.compare.metrics import kl_divergence
from pgm_dp.learners import CGMEM, NaiveMLE

# 1. Declare a model: variables with their domain sizes, and cliques.
dom = Domain.from_dict({"age": 4, "smoker": 2, "disease": 3, "region": 5})
rng = np.random.default_rng(0)
cliques = [("age", "smoker"), ("smoker", "disease"), ("age", "disease"), ("disease", "region")]
truth = MarkovRandomField(dom, cliques, [rng.normal(size=dom.sizes(c)) for c in cliques])
print(truth, "log Z =", float(truth.log_partition()))

# 2. Data: here sampled from the model (a DataFrame of integer codes).
data = truth.sample(20_000, rng)

# 3. Release the clique tables under 1-DP, with an accountant that enforces the budget.
acct = pgm_dp.Accountant(pgm_dp.PureDP(1.0))
release = pgm_dp.release_marginals(data, truth, budget=pgm_dp.PureDP(1.0), rng=1, accountant=acct)
print(acct.report())
try:  # spending more than the budget is refused before any noise is drawn
    pgm_dp.release_marginals(data, truth, budget=pgm_dp.PureDP(0.5), accountant=acct)
except pgm_dp.BudgetExceededError as err:
    print("refused:", err)

# 4. Fit two learners to the same release and see what privacy cost.
for name, learner in [("naive MLE", NaiveMLE()), ("CGM-EM", CGMEM())]:
    fit = learner.fit(release, truth)
    print(f"{name:10s} KL(true || learned) = {kl_divergence(truth, fit.model):.4f}")
