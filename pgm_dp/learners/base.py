"""The learner contract: two kinds of learner, one :class:`Fit` result.

A learner is a frozen dataclass of hyper-parameters with one ``fit`` method. There are two
kinds, one :class:`~typing.Protocol` each:

* :class:`ReleaseLearner` — ``fit(release, mrf) -> Fit``: estimates the model from a private
  release (:class:`~pgm_dp.privacy.NoisyMarginals`) alone. It never sees records, so it is
  post-processing and spends nothing (naive MLE, CGM-EM).
* :class:`RecordLearner` — ``fit(data, mrf, *, budget, rng, accountant) -> Fit``: reads the
  records and spends ``budget`` through the privacy layer, charging ``accountant`` (if
  given) before any noise is drawn (PSGD). Non-private references take ``budget=None``.

In both, ``mrf`` (a :class:`~pgm_dp.models.MarkovRandomField`) supplies the structure
(domain and cliques) and, where useful, the starting point.

What a fit returns
------------------
``Fit.model`` has ``mrf``'s domain and, as a rule, ``mrf``'s cliques in ``mrf``'s order
with new log-potentials: every release learner, and every record learner that estimates
parameters. A record learner that chooses the structure itself declares it with the class
attribute ``selects_structure = True`` (:func:`selects_structure`); its model has
``mrf``'s domain and cliques of its own choosing (PMW: one clique over all variables;
Zhang et al.'s stability structure learning: the learned edges). :func:`check_fit` checks
a fit against this contract (every registered learner is tested with it). Zhang et al.'s
learners also take a :class:`~pgm_dp.Domain` for ``mrf``: the complete pairwise graph with
a unary clique per variable over it.

Budgets are :class:`~pgm_dp.privacy.Budget` objects (``PureDP``, ``ZCDP``, ``ApproxDP``;
``None`` only for non-private references). The functions of a paper's algorithm keep the
paper's parameters (Zhang et al.'s ``rho``, a ``ZCDP`` or the bare number).

Writing a learner
-----------------
>>> from dataclasses import dataclass
>>> from pgm_dp.learners import Fit, fit_marginals, noisy_pseudo_marginals
>>> @dataclass(frozen=True)
... class ProjectedMLE:                      # a ReleaseLearner
...     l2: float = 1e-3
...     def fit(self, release, mrf):
...         check_release_matches(release, mrf)
...         targets = noisy_pseudo_marginals(release, project=True)
...         res = fit_marginals(mrf.replace(None), targets, l2=self.l2)
...         return Fit(res.model, info={"converged": res.converged})
>>> isinstance(ProjectedMLE(), ReleaseLearner)
True

Register it (:func:`pgm_dp.learners.register`) and ``pgm-dp compare --learners mine`` runs
it beside the others.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..domain import Domain
from ..errors import ConvergenceWarning, DomainError
from ..inference.tables import concat_tables
from ..models.mrf import MarkovRandomField
from ..rng import RngLike
from ..tables import flatten_tables, unflatten_tables

if TYPE_CHECKING:
    from ..privacy import Accountant, Budget, NoisyMarginals

__all__ = [
    "Fit",
    "check_fit",
    "selects_structure",
    "ReleaseLearner",
    "RecordLearner",
    "check_release_matches",
    "concat_tables",
    "flatten_tables",
    "unflatten_tables",
]


@dataclass(frozen=True)
class Fit:
    """A fitted model and how it was obtained.

    ``model`` is the learned :class:`MarkovRandomField`; ``history`` a list of per-iteration
    records (dicts: objective, KL, ... where meaningful); ``info`` anything else the learner
    reports (iterations, ``converged``, the ``budget`` of the release or the cost ``spent``).
    A learner that reports several models from one run (its registry ``outputs``) may give
    ``info["seconds"] = {column: seconds}`` for the time of each.
    """

    model: MarkovRandomField
    history: list[dict[str, Any]] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    def warn_unless_converged(self, learner: str, cap: int | None = None) -> Fit:
        """This fit, after a :class:`~pgm_dp.errors.ConvergenceWarning` if
        ``info["converged"]`` is false (a silent non-converged fit looks like a result); with
        ``cap``, only if the fit also used all ``cap`` iterations. The MLE learners pass their
        cap: before it, L-BFGS stops only when its line search can no longer decrease the
        objective in float64, i.e. at the precision limit (``docs/cgm_em.md``)."""
        capped = cap is None or self.info.get("iterations", cap) >= cap
        if not self.info.get("converged", True) and capped:
            done = ", ".join(
                f"{k}={self.info[k]:.3g}"
                for k in ("iterations", "max_gradient", "nlbp_iterations")
                if k in self.info
            )
            warnings.warn(
                f"{learner} did not converge ({done}); the model returned is its last iterate",
                ConvergenceWarning,
                stacklevel=3,
            )
        return self


@runtime_checkable
class ReleaseLearner(Protocol):
    """Fits an MRF to a private release alone (post-processing: spends nothing)."""

    def fit(self, release: NoisyMarginals, mrf: MarkovRandomField) -> Fit:
        """The model of ``mrf``'s structure estimated from ``release``."""
        ...


@runtime_checkable
class RecordLearner(Protocol):
    """Fits an MRF to records, spending ``budget`` through the privacy layer.

    ``budget`` is what the fit may spend (``None`` only for non-private references);
    ``accountant``, if given, is charged before any noise is drawn and refuses
    over-spending; ``rng`` (seed, ``numpy.random.Generator`` or ``None``) drives every
    random draw.
    """

    def fit(
        self,
        data: Any,
        mrf: MarkovRandomField,
        *,
        budget: Budget | None = None,
        rng: RngLike = None,
        accountant: Accountant | None = None,
    ) -> Fit:
        """The model of ``mrf``'s structure estimated from ``data``."""
        ...


def check_release_matches(release, mrf: MarkovRandomField) -> None:
    """Refuse a release whose domain or cliques differ from the model's, or whose ``N`` is
    not positive (:meth:`~pgm_dp.privacy.Measurements.in_order`, the one such check)."""
    release.in_order(mrf.cliques, mrf.domain)


def selects_structure(learner: Any) -> bool:
    """Whether ``learner`` chooses its model's cliques itself (its class attribute
    ``selects_structure``; ``False`` when absent: the model is on ``mrf``'s cliques)."""
    return bool(getattr(learner, "selects_structure", False))


def check_fit(learner: Any, fit: Fit, mrf: MarkovRandomField | Domain) -> Fit:
    """``fit`` of ``learner`` on ``mrf``, checked against the contract (module docstring):
    a :class:`Fit` whose model has ``mrf``'s domain and, unless the learner
    :func:`selects_structure`, ``mrf``'s cliques in order; a
    :class:`~pgm_dp.errors.DomainError` otherwise."""
    name = type(learner).__name__
    if not isinstance(fit, Fit) or not isinstance(fit.model, MarkovRandomField):
        raise DomainError(f"{name}.fit must return a Fit holding a MarkovRandomField")
    domain = mrf if isinstance(mrf, Domain) else mrf.domain
    if fit.model.domain != domain:
        raise DomainError(f"{name} returned a model of another domain: {fit.model.domain}")
    if isinstance(mrf, MarkovRandomField) and not selects_structure(learner):
        if fit.model.cliques != mrf.cliques:
            raise DomainError(
                f"{name} returned the cliques {list(fit.model.cliques)} for "
                f"{list(mrf.cliques)}; a learner choosing its structure declares "
                "selects_structure = True"
            )
    return fit
