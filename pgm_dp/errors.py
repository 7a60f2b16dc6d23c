"""Exceptions raised by pgm_dp.

Every error about bad input is a :class:`ValueError` subclass so that callers can catch
``ValueError`` generically, and every check runs before any privacy budget is spent.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = [
    "PgmDpError",
    "DomainError",
    "DataValidationError",
    "ModelTooLargeError",
    "PrivacyParameterError",
    "BudgetExceededError",
    "ConvergenceWarning",
    "require_extra",
    "reading",
]


class PgmDpError(Exception):
    """Base class of all pgm_dp errors."""


class DomainError(PgmDpError, ValueError):
    """A variable, clique or domain size is invalid (unknown variable, size < 1, duplicate)."""


class DataValidationError(PgmDpError, ValueError):
    """Data do not match the domain: wrong shape, NaN, non-integers, out-of-domain, empty."""


class ModelTooLargeError(PgmDpError, ValueError):
    """Exact inference would need a table larger than the allowed number of cells."""


class PrivacyParameterError(PgmDpError, ValueError):
    """A privacy parameter is invalid (epsilon <= 0, delta outside [0, 1), bad sensitivity)."""


class BudgetExceededError(PgmDpError, RuntimeError):
    """A charge would exceed the accountant's total budget; nothing was spent or drawn."""


class ConvergenceWarning(UserWarning):
    """A learner stopped before its convergence criterion was met (``fit.info["converged"]``
    is false): the returned model is the last iterate, not the optimum."""


def require_extra(module: str, extra: str, what: str) -> None:
    """Raise :class:`ImportError` naming the extra to install unless ``module`` (an
    optional dependency) can be imported; checked before any work that needs it."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise ImportError(f"{what} needs {module}: pip install 'pgm-dp[{extra}]'")


#: What parsing a malformed document may raise (wrong types, missing keys, numbers too large
#: for their array, NaN or inf where a count belongs, nesting too deep).
_MALFORMED = (
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    AttributeError,
    OverflowError,
    ZeroDivisionError,
    RecursionError,
)


@contextmanager
def reading(what: str) -> Iterator[None]:
    """Read ``what`` (a saved document: a release, a plan) inside this block: whatever a
    malformed document raises there becomes a :class:`DataValidationError` naming ``what``
    (a :class:`PgmDpError` passes unchanged), so that a crafted file never escapes as a bare
    ``TypeError`` or ``OverflowError``. The message quotes the parser's, never a record: a
    document holds released values only.

    Args:
        what: the document's name in the message.
    """
    try:
        yield
    except PgmDpError:
        raise
    except _MALFORMED as err:
        raise DataValidationError(f"malformed {what}: {type(err).__name__}: {err}"[:300]) from None
