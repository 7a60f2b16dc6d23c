"""Bayesian posteriors of MRFs from private releases (noise-aware; NumPyro and ArviZ).

* :mod:`~pgm_dp.bayes.model`: the NumPyro model (release observed, counts integrated out).
* :mod:`~pgm_dp.bayes.problem`: the release's data as the compiled programs take them (a
  pytree) and the covariance types.
* :mod:`~pgm_dp.bayes.compiled`: the compiled functions of a model structure, one bundle.
* :mod:`~pgm_dp.bayes.fit`: the fit the draws start from (mode, covariance, ``Sigma``).
* :mod:`~pgm_dp.bayes.draws`: draws from a fit, the model's sites and the marginals.
* :mod:`~pgm_dp.bayes.posterior`: :func:`posterior` (NUTS or Laplace) → ``xarray.DataTree``.
* :mod:`~pgm_dp.bayes.mean`: :class:`PosteriorMean`, registered as the release learner
  ``"bayes"`` (the model of the posterior's mean marginals).
* :mod:`~pgm_dp.bayes.nuts`: NUTS on the whitened identifiable log-potentials.
* :mod:`~pgm_dp.bayes.batch`: :func:`marginal_draws`, many releases of one structure at once.
* :mod:`~pgm_dp.bayes.laplace`: the Laplace fit as one compiled program over releases.
* :mod:`~pgm_dp.bayes.linear`: the Laplace method's marginals (linearised at the MAP) and
  the data's own tables (``table:`` sites).
* :mod:`~pgm_dp.bayes.checks`: posterior predictive checks of any fitted model.
* :mod:`~pgm_dp.bayes.intervals`: :func:`workload_intervals`, intervals of the data's
  marginals, measured (the posterior) or not (AIM's error bounds).
* :mod:`~pgm_dp.bayes.ising`: :func:`prising_posterior`, the posterior of PrIsing's ``β``.

The learner is listed in :mod:`pgm_dp.learners` by reference (``"pgm_dp.bayes:PosteriorMean"``),
so the registry names it without importing NumPyro; this package is imported on its first use.
"""

from .batch import marginal_draws
from .checks import PredictiveCheck, plot_check, predictive_check, replicate_releases
from .intervals import Interval, workload_intervals
from .ising import ScoreReference, prising_posterior, score_reference
from .mean import PosteriorMean, posterior_marginals, posterior_mean_model
from .model import PRIOR_SCALE, Problem, prepare, release_model, site_name
from .posterior import posterior

__all__ = [
    "Interval",
    "PRIOR_SCALE",
    "PredictiveCheck",
    "plot_check",
    "predictive_check",
    "replicate_releases",
    "PosteriorMean",
    "Problem",
    "posterior",
    "posterior_marginals",
    "marginal_draws",
    "posterior_mean_model",
    "prepare",
    "release_model",
    "site_name",
    "workload_intervals",
    "ScoreReference",
    "prising_posterior",
    "score_reference",
]
