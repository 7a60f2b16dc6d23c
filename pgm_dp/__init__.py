"""pgm_dp: learning discrete undirected graphical models under differential privacy.

Layers (each a module or folder; nothing imports upward):
``domain`` → ``models`` → ``inference`` → ``stats`` → ``privacy`` → ``learners`` →
``bayes`` → ``metrics`` / ``experiments`` → ``cli``.

Importing pgm_dp enables float64 in JAX (``jax_enable_x64``).
"""

from . import (
    _config,  # noqa: F401  (enables float64 before any JAX array is created)
    inference,
    metrics,
    models,
)
from .domain import Domain
from .errors import (
    BudgetExceededError,
    DataValidationError,
    DomainError,
    ModelTooLargeError,
    PgmDpError,
    PrivacyParameterError,
)
from .models import MarkovRandomField
from .stats import sufficient_statistics

__version__ = "0.1.0"

__all__ = [
    "Domain",
    "MarkovRandomField",
    "inference",
    "metrics",
    "models",
    "sufficient_statistics",
    "PgmDpError",
    "DomainError",
    "DataValidationError",
    "ModelTooLargeError",
    "PrivacyParameterError",
    "BudgetExceededError",
]
