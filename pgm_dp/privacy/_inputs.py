"""Shared input checks of the mechanism layer: value arrays and the accountant charge."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import DataValidationError
from .accountant import Accountant, check_accountant
from .budget import Budget

__all__ = ["_as_values", "_charge"]


def _as_values(values: Any, *, integer: bool, name: str = "values") -> np.ndarray:
    """A fresh float64 (or int64 when ``integer``) copy of ``values``; errors on bad entries."""
    try:
        arr = np.array(values, copy=True)
    except (TypeError, ValueError) as err:
        raise DataValidationError(f"{name} must be numeric: {err}") from None
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise DataValidationError(f"{name} must be numeric, got dtype {arr.dtype}")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise DataValidationError(f"{name} contain NaN or inf")
    if not integer:
        return arr.astype(np.float64)
    if arr.dtype.kind == "f":
        if np.any(arr != np.round(arr)):
            raise DataValidationError(f"discrete mechanisms need integer {name}")
        if arr.size and np.max(np.abs(arr)) >= 2.0**62:
            raise DataValidationError(f"{name} too large for int64")
    return arr.astype(np.int64)


def _charge(
    accountant: Accountant | None, cost: Budget, what: str, mechanism: str, scale: float
) -> None:
    if check_accountant(accountant) is not None:
        accountant.charge(cost, what=what, mechanism=mechanism, scale=scale)
