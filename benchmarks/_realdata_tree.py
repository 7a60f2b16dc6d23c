"""A fitted model as a calibrated junction tree, for scoring any contender the same way:
:mod:`pgm_dp.compare.calibrated_tree` (NumPy and networkx only), under the name the benchmark's
scripts import."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pgm_dp.compare.calibrated_tree import (  # noqa: E402
    CalibratedTree,
    data_marginal,
    load_tree,
    mean_tvd,
    save_tree,
)

__all__ = ["CalibratedTree", "save_tree", "load_tree", "data_marginal", "mean_tvd"]
