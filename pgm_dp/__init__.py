"""pgm_dp: learning discrete undirected graphical models under differential privacy.

Layers, bottom to top (each a module or folder, or a module inside a folder placed below
its folder; a module imports only from its own layer or the ones below, and no two modules
import each other; ``tests/test_structure.py`` checks both against :data:`LAYERS`):
``errors`` / ``rng`` / ``_config`` → ``domain`` / ``encoding`` (columns → codes) →
``tables`` (the flat table layout, counting records into a table) → ``inference`` (pure
functions of tables; its backends) → ``models`` (``MarkovRandomField``, the gauge) →
``stats`` / ``datasets`` → ``privacy`` → ``ising`` (one network, PrIsing) →
``learners`` (the contract; CGM-EM in ``learners.cgm``, Zhang et al. in ``learners.zhang``)
→ ``select`` (AIM, MST: the marginals to measure) → ``bayes`` (posteriors) / ``io`` /
``prepare`` (a user's table → codes) → ``table`` (a user's table end to end: the fit, its
check and report, synthetic records) → ``compare`` (learners on one budget, on sampled
graphs or a user's table, beside Private-PGM's MST and AIM; the scores,
``compare.metrics``) → ``cli``.
``plugins`` (entry points) and ``plotting`` (optional matplotlib) sit at the bottom.
The papers' experiments are not part of the package (``reproductions/`` in the repository).

Importing pgm_dp enables float64 in JAX (``jax_enable_x64``); its names are imported lazily.
The first module that uses JAX also turns on JAX's persistent compilation cache
(:mod:`pgm_dp._config`; ``PGM_DP_NO_CACHE=1`` opts out, ``PGM_DP_CACHE_DIR`` moves it).
"""

import importlib
import os
import sys

# Lazy facade (PEP 562): ``import pgm_dp`` loads no JAX, pgmpy or matplotlib, so the command
# line starts in a fraction of a second; each name below is imported on first use. JAX reads
# JAX_ENABLE_X64 when it is first imported, and ``_config`` (imported before any lazy name)
# sets float64 when JAX was imported before pgm_dp.
os.environ.setdefault("JAX_ENABLE_X64", "1")
if "jax" in sys.modules:
    from . import _config  # noqa: F401

_LAZY = {
    "Domain": "domain",
    "MarkovRandomField": "models",
    "sufficient_statistics": "stats",
    "select_cliques": "select",
    "metrics": "compare.metrics",
    "load_adult": "datasets",
    **dict.fromkeys(["fit_table", "TableFit"], "table.fit"),
    "sample_table": "table.synth",
    **dict.fromkeys(["prepare_plan", "Preparation"], "prepare"),
    **dict.fromkeys(
        [
            "BudgetExceededError",
            "ConvergenceWarning",
            "DataValidationError",
            "DomainError",
            "ModelTooLargeError",
            "PgmDpError",
            "PrivacyParameterError",
        ],
        "errors",
    ),
    **dict.fromkeys(
        [
            "ZCDP",
            "Accountant",
            "ApproxDP",
            "Charge",
            "DPSGDCost",
            "NoiseModel",
            "NoisyMarginals",
            "Measurements",
            "PureDP",
            "calibrate_noise_multiplier",
            "compose",
            "discrete_gaussian_mechanism",
            "discrete_laplace_mechanism",
            "dpsgd_epsilon",
            "exponential_mechanism",
            "gaussian_mechanism",
            "laplace_mechanism",
            "release_marginals",
            "report_noisy_max",
            "zcdp_to_approx_dp",
        ],
        "privacy",
    ),
}
_SUBMODULES = ("inference", "ising", "learners", "metrics", "models", "privacy", "io", "bayes")


def __getattr__(name: str):
    if name in _LAZY or name in _SUBMODULES:
        importlib.import_module("._config", __name__)
        module = importlib.import_module(f".{_LAZY.get(name, name)}", __name__)
        value = module if name in _SUBMODULES else getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'pgm_dp' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES))


__version__ = "0.1.0"

#: The package's layers, bottom to top (see the module docstring).
LAYERS = (
    ("errors", "rng", "_config", "_progress", "plugins", "plotting"),
    ("domain", "encoding"),
    ("tables",),
    ("inference",),
    ("models",),
    ("stats", "datasets"),
    ("privacy",),
    ("ising",),
    ("learners",),
    ("select",),
    ("io", "bayes", "prepare"),
    ("table",),
    ("compare",),
    ("cli",),
)

__all__ = [
    "Domain",
    "MarkovRandomField",
    "sufficient_statistics",
    "select_cliques",
    "load_adult",
    "prepare_plan",
    "Preparation",
    "fit_table",
    "TableFit",
    "sample_table",
    "PureDP",
    "ZCDP",
    "ApproxDP",
    "Accountant",
    "Charge",
    "NoiseModel",
    "NoisyMarginals",
    "Measurements",
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
    "metrics",
    "models",
    "privacy",
    "io",
    "PgmDpError",
    "DomainError",
    "DataValidationError",
    "ModelTooLargeError",
    "PrivacyParameterError",
    "BudgetExceededError",
    "ConvergenceWarning",
]
