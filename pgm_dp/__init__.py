"""pgm_dp: learning discrete undirected graphical models under differential privacy.

Layers, bottom to top (each a module or folder; a module imports only from its own layer or
the ones below, and no two modules import each other; ``tests/test_structure.py`` checks
both against :data:`LAYERS`):
``errors`` / ``rng`` / ``_config`` → ``domain`` → ``inference`` (pure functions of tables)
→ ``models`` (``MarkovRandomField``) → ``stats`` / ``datasets`` / ``metrics`` → ``privacy``
→ ``ising`` (one network, PrIsing) → ``learners`` → ``bayes`` (posteriors) → ``experiments``
→ ``cli``.

Importing pgm_dp enables float64 in JAX (``jax_enable_x64``).
"""

# ruff: noqa: I001  (``_config`` must run before any other module creates a JAX array)
from . import _config  # noqa: F401
from .domain import Domain
from .errors import (
    BudgetExceededError,
    ConvergenceWarning,
    DataValidationError,
    DomainError,
    ModelTooLargeError,
    PgmDpError,
    PrivacyParameterError,
)
from .models import MarkovRandomField
from .stats import sufficient_statistics
from .privacy import (
    ZCDP,
    Accountant,
    ApproxDP,
    Charge,
    DPSGDCost,
    NoiseModel,
    NoisyMarginals,
    PureDP,
    calibrate_noise_multiplier,
    compose,
    discrete_gaussian_mechanism,
    discrete_laplace_mechanism,
    dpsgd_epsilon,
    exponential_mechanism,
    gaussian_mechanism,
    laplace_mechanism,
    release_marginals,
    report_noisy_max,
    zcdp_to_approx_dp,
)
from . import inference, ising, learners, metrics, models, privacy
from . import bayes  # registers the ``bayes`` learner

__version__ = "0.1.0"

#: The package's layers, bottom to top (see the module docstring).
LAYERS = (
    ("errors", "rng", "_config"),
    ("domain",),
    ("inference",),
    ("models",),
    ("stats", "datasets", "metrics"),
    ("privacy",),
    ("ising",),
    ("learners",),
    ("bayes",),
    ("experiments",),
    ("cli",),
)

__all__ = [
    "Domain",
    "MarkovRandomField",
    "sufficient_statistics",
    "PureDP",
    "ZCDP",
    "ApproxDP",
    "Accountant",
    "Charge",
    "NoiseModel",
    "NoisyMarginals",
    "release_marginals",
    "laplace_mechanism",
    "gaussian_mechanism",
    "discrete_laplace_mechanism",
    "discrete_gaussian_mechanism",
    "exponential_mechanism",
    "report_noisy_max",
    "compose",
    "zcdp_to_approx_dp",
    "dpsgd_epsilon",
    "calibrate_noise_multiplier",
    "DPSGDCost",
    "inference",
    "ising",
    "learners",
    "bayes",
    "metrics",
    "models",
    "privacy",
    "PgmDpError",
    "DomainError",
    "DataValidationError",
    "ModelTooLargeError",
    "PrivacyParameterError",
    "BudgetExceededError",
    "ConvergenceWarning",
]
