"""Privacy layer: budgets, accounting, noise samplers, mechanisms, releases and audits.

* :mod:`~pgm_dp.privacy.budget`: ``PureDP``, ``ZCDP``, ``ApproxDP``, conversions, composition.
* :mod:`~pgm_dp.privacy.accountant`: the ``Accountant`` odometer and its ``Charge`` records.
* :mod:`~pgm_dp.privacy.samplers`: floating-point and exact discrete noise, ``as_generator``.
* :mod:`~pgm_dp.privacy.noise`: noise calibration and ``NoiseModel``.
* :mod:`~pgm_dp.privacy.lattice`: exact noise on a lattice ``2^k Z`` (floating-point safe).
* :mod:`~pgm_dp.privacy.mechanisms`: Laplace, Gaussian, discrete (all exact, fp-safe).
* :mod:`~pgm_dp.privacy.argmax`: exact exponential mechanism, report-noisy-max / -min.
* :mod:`~pgm_dp.privacy.release`: noisy sufficient statistics (Bernstein et al. 2017).
* :mod:`~pgm_dp.privacy.dpsgd`: DP-SGD accounting via ``dp_accounting``.
* :mod:`~pgm_dp.privacy.audit`: statistical checks of DP claims.

The private choice of the marginals to measure (AIM, MST) is :mod:`pgm_dp.select`, a layer
above the learners it calls.
"""

from .accountant import Accountant, Charge
from .argmax import (
    exponential_mechanism,
    frank_wolfe_step_budget,
    report_noisy_max,
    report_noisy_min,
)
from .budget import ZCDP, ApproxDP, Budget, PureDP, compose, zcdp_to_approx_dp
from .dpsgd import (
    DPSGDCost,
    calibrate_noise_multiplier,
    dpsgd_cost,
    dpsgd_epsilon,
    dpsgd_event,
)
from .measurements import Measurements, ReleaseArrays
from .mechanisms import (
    discrete_gaussian_mechanism,
    discrete_laplace_mechanism,
    gaussian_mechanism,
    laplace_mechanism,
    perturb,
)
from .noise import (
    NoiseModel,
    calibrate_discrete_gaussian,
    calibrate_discrete_laplace,
    calibrate_gaussian,
    calibrate_laplace,
    zcdp_rho_within,
)
from .release import NoisyMarginals, release_marginals
from .samplers import (
    as_generator,
    sample_discrete_gaussian,
    sample_discrete_laplace,
    sample_gaussian,
    sample_laplace,
)

__all__ = [
    "PureDP",
    "ZCDP",
    "ApproxDP",
    "Budget",
    "compose",
    "zcdp_to_approx_dp",
    "Accountant",
    "Charge",
    "as_generator",
    "sample_laplace",
    "sample_gaussian",
    "sample_discrete_laplace",
    "sample_discrete_gaussian",
    "NoiseModel",
    "calibrate_laplace",
    "calibrate_gaussian",
    "calibrate_discrete_laplace",
    "calibrate_discrete_gaussian",
    "zcdp_rho_within",
    "perturb",
    "laplace_mechanism",
    "gaussian_mechanism",
    "discrete_laplace_mechanism",
    "discrete_gaussian_mechanism",
    "exponential_mechanism",
    "report_noisy_max",
    "report_noisy_min",
    "frank_wolfe_step_budget",
    "NoisyMarginals",
    "Measurements",
    "ReleaseArrays",
    "release_marginals",
    "DPSGDCost",
    "dpsgd_event",
    "dpsgd_epsilon",
    "dpsgd_cost",
    "calibrate_noise_multiplier",
]
