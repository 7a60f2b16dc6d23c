"""Models: the :class:`MarkovRandomField` pytree, the papers' model families, pgmpy in/out,
and the shared numerics of log-potential tables (:mod:`.tables`: the flat table layout;
:mod:`.gauge`: the gauge projector).

Names are imported on first use (PEP 562), so that :mod:`pgm_dp.inference`, one layer
below, can use :mod:`.tables` without importing :class:`MarkovRandomField` (which imports
inference).
"""

import importlib

_LAZY = {
    "MarkovRandomField": "mrf",
    **dict.fromkeys(
        [
            "third_order_chain",
            "erdos_renyi",
            "random_tree",
            "ising",
            "pairwise",
            "dirichlet_pairwise",
        ],
        "families",
    ),
}

__all__ = [
    "MarkovRandomField",
    "third_order_chain",
    "erdos_renyi",
    "random_tree",
    "ising",
    "pairwise",
    "dirichlet_pairwise",
]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    try:  # a submodule not imported yet (``pgm_dp.models.families``)
        return importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__():
    return sorted(set(globals()) | set(__all__))
