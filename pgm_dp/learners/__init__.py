"""Learners: estimators of MRF parameters behind one contract, and their registry.

* From a release (:class:`ReleaseLearner`, ``fit(release, mrf)``): :class:`NaiveMLE`,
  :class:`CGMEM`, and mbi's :class:`~pgm_dp.learners.mbi.MirrorDescentMBI` (``bench`` extra).
* From records (:class:`RecordLearner`, ``fit(data, mrf, *, budget, rng, accountant)``):
  :class:`PSGD`, and the non-private references :class:`NonPrivateMLE` and
  :class:`RandomMarginals` (``budget=None``).

Every learner is registered under a short name (:func:`available`, :func:`get`,
:func:`make`), third-party ones through the ``pgm_dp.learners`` entry points;
``pgm-dp fit``, ``pgm-dp compare`` and the paper reproductions dispatch through the registry.

>>> available()[:6]
('random', 'nonprivate', 'naive', 'cgm', 'psgd', 'mbi')
>>> make("naive", l2=1e-3)
NaiveMLE(project=True, l2=0.001, tol=1e-08, max_iters=2000)
"""

from __future__ import annotations

from .base import Fit, RecordLearner, ReleaseLearner, check_release_matches
from .baselines import NonPrivateMLE, RandomMarginals
from .cgm import CGMEM, nlbp
from .mbi import MirrorDescentMBI
from .mle import MLEResult, fit_marginals
from .naive_mle import NaiveMLE, noisy_pseudo_marginals, project_to_simplex
from .psgd import PSGD
from .registry import LearnerSpec, available, get, labels, make, register, unregister

__all__ = [
    "CGMEM",
    "Fit",
    "LearnerSpec",
    "MLEResult",
    "MirrorDescentMBI",
    "NaiveMLE",
    "NonPrivateMLE",
    "PSGD",
    "RandomMarginals",
    "RecordLearner",
    "ReleaseLearner",
    "available",
    "check_release_matches",
    "fit_marginals",
    "get",
    "labels",
    "make",
    "nlbp",
    "noisy_pseudo_marginals",
    "project_to_simplex",
    "register",
    "unregister",
]


register(
    LearnerSpec(
        "random",
        RandomMarginals,
        "records",
        "Random",
        "MLE on random Dirichlet(1) marginals: the floor any learner should beat",
        private=False,
    )
)
register(
    LearnerSpec(
        "nonprivate",
        NonPrivateMLE,
        "records",
        "Non-private",
        "MLE on the exact clique tables (no privacy): the ceiling",
        private=False,
    )
)
register(
    LearnerSpec(
        "naive",
        NaiveMLE,
        "release",
        "Naive MLE",
        "MLE on the projected noisy tables (Bernstein et al. 2017, Sec. 3.1)",
    )
)
register(
    LearnerSpec(
        "cgm",
        CGMEM,
        "release",
        "CGM",
        "EM for collective graphical models with NLBP (Bernstein et al. 2017, Alg. 1-2)",
    )
)
register(
    LearnerSpec(
        "psgd",
        PSGD,
        "records",
        "PSGD",
        "DP-SGD on the per-record log-likelihood (Abadi et al. 2016)",
        budget="ApproxDP",
    )
)
register(
    LearnerSpec(
        "mbi",
        MirrorDescentMBI,
        "release",
        "mbi MD",
        "Private-PGM mirror descent at 300/1000/3000 iterations (needs the bench extra)",
    )
)


# -- Zhang, Kamath, Kulkarni & Wu (2020) ------------------------------------------------------
from .zhang import (  # noqa: E402
    ZhangIsing,
    ZhangPairwise,
    learn_ising,
    learn_pairwise,
    zcdp_for_epsilon,
)
from .zhang.binary_mrf import ZhangBinaryMRF, learn_binary_mrf  # noqa: E402
from .zhang.frank_wolfe import private_frank_wolfe  # noqa: E402
from .zhang.logistic import OutputPerturbationIsing, learn_ising_logistic  # noqa: E402
from .zhang.pmw import PMW, pmw_release  # noqa: E402
from .zhang.structure import StabilityStructure, learn_structure  # noqa: E402

__all__ += [
    "OutputPerturbationIsing",
    "PMW",
    "StabilityStructure",
    "ZhangBinaryMRF",
    "ZhangIsing",
    "ZhangPairwise",
    "learn_binary_mrf",
    "learn_ising",
    "learn_ising_logistic",
    "learn_pairwise",
    "learn_structure",
    "pmw_release",
    "private_frank_wolfe",
    "zcdp_for_epsilon",
]


for _name, _cls, _label, _what in (
    ("zhang_ising", ZhangIsing, "PFW Ising", "Alg. 2"),
    ("zhang_pairwise", ZhangPairwise, "PFW pairwise", "Alg. 3"),
    ("zhang_tmrf", ZhangBinaryMRF, "PFW t-wise", "Alg. 4 (t = 3)"),
):
    register(
        LearnerSpec(
            _name,
            _cls,
            "records",
            _label,
            f"Zhang et al. 2020 {_what} (private Frank-Wolfe), rho-zCDP",
            budget="ZCDP",
        )
    )
    register(
        LearnerSpec(
            f"{_name}_np",
            _cls,
            "records",
            f"{_label} (non-private)",
            f"Zhang et al. 2020 {_what} without noise (rho = inf): the reference",
            private=False,
        )
    )
register(
    LearnerSpec(
        "ising_logistic",
        OutputPerturbationIsing,
        "records",
        "Logistic Ising (output pert.)",
        "per-node L2 logistic regression + Gaussian output perturbation (Chaudhuri et al. "
        "2011), rho-zCDP for one record replaced (n public)",
        budget="ZCDP",
    )
)
register(
    LearnerSpec(
        "pmw",
        PMW,
        "records",
        "PMW",
        "private multiplicative weights on parities of order <= 2 (Hardt & Rothblum 2010), "
        "(epsilon, delta) via zCDP; p <= 20",
        budget="ApproxDP",
    )
)
register(
    LearnerSpec(
        "zhang_structure",
        StabilityStructure,
        "records",
        "Stable structure",
        "Zhang et al. 2020 Sec. 6: subsample-and-aggregate + PTR on the graph, (epsilon, delta)",
        budget="ApproxDP",
    )
)
register(  # listed here, imported on first use: pgm_dp.bayes is a layer above (numpyro)
    LearnerSpec(
        "bayes",
        "pgm_dp.bayes:PosteriorMean",
        "release",
        "Posterior mean",
        "noise-aware Bayesian posterior mean (CLT + release mechanism; NUTS)",
    )
)
