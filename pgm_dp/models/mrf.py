"""The Markov random field: a domain, cliques and log-potentials, as an immutable JAX pytree.

``p(x) = exp(sum_C theta_C(x_C) - log Z(theta))`` with one log-potential table ``theta_C``
per clique (axes in the clique's variable order). The log-potentials are the pytree leaves,
the domain and cliques are static, so a model passes through ``jax.jit``/``jax.grad`` and
``jax.grad(lambda m: m.log_partition())(mrf)`` returns the clique marginals as an MRF-shaped
pytree (the MLE gradient used by the learners).

Example
-------
>>> import numpy as np
>>> from pgm_dp import Domain, MarkovRandomField
>>> dom = Domain(["A", "B", "C"], [2, 3, 4])
>>> mrf = MarkovRandomField(dom, cliques=[("A", "B"), ("B", "C")])
>>> float(mrf.log_partition()) == float(np.log(24))
True
>>> mrf.marginal(("A", "C")).shape
(2, 4)
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence, Set
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from .._config import any_traced
from ..domain import Clique, Domain, check_table_cells, normalize_cliques
from ..errors import DomainError
from ..inference.backend import Backend, get_backend
from ..inference.junction_tree import DEFAULT_MAX_CELLS, build_junction_tree, clique_marginals
from ..inference.queries import calibrated
from ..inference.sampling import sample_junction_tree
from ..rng import as_generator
from .pgmpy_io import read_pgmpy, write_pgmpy

__all__ = ["MarkovRandomField"]


@jax.tree_util.register_pytree_node_class
class MarkovRandomField:
    """A discrete MRF ``p(x) ∝ exp(sum_C theta_C(x_C))``.

    Args:
        domain (Domain): The variables and their sizes.
        cliques (sequence of variable tuples): Each clique's variable order is the axis order of its
            log-potential table.
        log_potentials (mapping clique → array, or sequence aligned with ``cliques``, optional):
            ``None`` means all zeros (the uniform distribution).
        max_cells (int): Largest junction-tree clique table exact inference may build.
    """

    __slots__ = ("domain", "cliques", "log_potentials", "max_cells")

    def __init__(
        self,
        domain: Domain,
        cliques: Sequence[Sequence[Hashable]],
        log_potentials: Mapping[Clique, Any] | Sequence[Any] | None = None,
        *,
        max_cells: int = DEFAULT_MAX_CELLS,
    ):
        cliques = normalize_cliques(domain, cliques)
        if len(set(cliques)) != len(cliques):
            raise DomainError(f"duplicate cliques in {cliques}")
        check_table_cells(domain, cliques)  # ModelTooLargeError before allocating a table
        if log_potentials is None:
            tables = tuple(jnp.zeros(domain.sizes(c), dtype=jnp.float64) for c in cliques)
        else:
            if isinstance(log_potentials, Mapping):
                unknown = set(map(tuple, log_potentials)) - set(cliques)
                if unknown:
                    raise DomainError(
                        f"log_potentials given for cliques not in the model: {unknown}"
                    )
                raw = [log_potentials.get(c) for c in cliques]
                raw = [
                    jnp.zeros(domain.sizes(c)) if t is None else t
                    for c, t in zip(cliques, raw, strict=True)
                ]
            else:
                raw = list(log_potentials)
                if len(raw) != len(cliques):
                    raise DomainError(f"{len(raw)} log-potential tables for {len(cliques)} cliques")
            tables = tuple(_as_table(t, c, domain) for t, c in zip(raw, cliques, strict=True))
        object.__setattr__(self, "domain", domain)
        object.__setattr__(self, "cliques", cliques)
        object.__setattr__(self, "log_potentials", tables)
        object.__setattr__(self, "max_cells", int(max_cells))

    def __setattr__(self, name, value):
        raise AttributeError("MarkovRandomField is immutable; use .replace(...)")

    def __reduce__(self):
        """Pickling and ``copy.deepcopy``: rebuilt through the constructor from NumPy
        tables (for files, prefer the open format of :mod:`pgm_dp.io`)."""
        tables = tuple(np.asarray(t) for t in self.log_potentials)
        return (_rebuild, (self.domain, self.cliques, tables, self.max_cells))

    # -- pytree ------------------------------------------------------------------------
    def tree_flatten(self):
        return self.log_potentials, (self.domain, self.cliques, self.max_cells)

    @classmethod
    def tree_unflatten(cls, aux, leaves):
        obj = object.__new__(cls)
        domain, cliques, max_cells = aux
        for name, value in (
            ("domain", domain),
            ("cliques", cliques),
            ("log_potentials", tuple(leaves)),
            ("max_cells", max_cells),
        ):
            object.__setattr__(obj, name, value)
        return obj

    def replace(self, log_potentials) -> MarkovRandomField:
        """The same structure with new log-potentials (mapping or aligned sequence)."""
        return MarkovRandomField(
            self.domain, self.cliques, log_potentials, max_cells=self.max_cells
        )

    @property
    def potentials(self) -> dict[Clique, jax.Array]:
        """``{clique: log-potential table}``."""
        return dict(zip(self.cliques, self.log_potentials, strict=True))

    def __repr__(self) -> str:
        return f"MarkovRandomField({self.domain!r}, cliques={list(self.cliques)})"

    # -- inference ---------------------------------------------------------------------
    def junction_tree(self, extra: Sequence[Clique] = ()):
        """The (cached) junction tree of this model's cliques plus ``extra`` cliques."""
        if not extra:  # the model's cliques were validated when it was built
            return build_junction_tree(self.domain, self.cliques, self.max_cells, validated=True)
        cliques = self.cliques + tuple(c for c in extra if c not in self.cliques)
        return build_junction_tree(self.domain, cliques, self.max_cells)

    def marginals(
        self,
        queries: Sequence[Sequence[Hashable]] | str | Backend | None = None,
        method: str | Backend = "junction_tree",
        **options,
    ) -> dict[Clique, np.ndarray | jax.Array]:
        """Marginal probability tables: ``{clique: table}`` for every clique of the model,
        or ``{query: table}`` for the given ``queries`` (variable tuples, axes in each
        query's order; any variables, inside a clique of the model or not).

        Queries are answered exactly from one calibration of the junction tree
        (:mod:`pgm_dp.inference.queries`: a belief summed where a clique holds the query,
        variable elimination along the tree otherwise). ``method``: an inference backend
        (:mod:`pgm_dp.inference.backend`) or its name, ``options`` its options;
        ``"junction_tree"`` is exact; ``"loopy_bp"`` returns BP pseudo-marginals (options
        ``damping``, ``tol``, ``max_iters`` of :func:`pgm_dp.inference.loopy_bp.loopy_bp`),
        ``"trw_bp"`` tree-reweighted BP's; with those, each query must lie inside a clique
        of the model. A name or backend given first is the ``method`` (``marginals("trw_bp")``).
        Called eagerly the tables are NumPy arrays; under ``jax.jit``/``jax.grad`` (traced
        log-potentials) they are JAX arrays.
        """
        if isinstance(queries, str) or not (queries is None or isinstance(queries, Sequence)):
            queries, method = None, queries  # marginals("loopy_bp"): the method
        backend = get_backend(method, **options)
        if queries is None:
            return dict(zip(self.cliques, backend.marginals(self), strict=True))
        qs = [self._query(q) for q in queries]
        if backend.exact and not any_traced(self.log_potentials):
            tree = calibrated(self.junction_tree(), self.log_potentials)
            return dict(zip(qs, tree.marginals(qs), strict=True))
        if not backend.exact:
            return self._approximate(backend, qs)
        return {q: self.marginal(q) for q in qs}

    def _query(self, variables) -> Clique:
        if isinstance(variables, Set):
            raise DomainError("variables must be given in order (a tuple or list), not a set")
        if isinstance(variables, str) or not isinstance(variables, Sequence):
            variables = (variables,)
        return normalize_cliques(self.domain, [variables])[0]

    def _approximate(self, backend: Backend, queries: list[Clique]) -> dict:
        """Queries from an approximate backend's clique pseudo-marginals."""
        margs = None
        out = {}
        for q in queries:
            holder = next((c for c in self.cliques if set(q) <= set(c)), None)
            if holder is None:
                raise DomainError(
                    f"{q} is inside no clique of the model: an approximate backend gives "
                    "clique pseudo-marginals only (use the exact junction tree)"
                )
            if margs is None:
                margs = dict(zip(self.cliques, backend.marginals(self), strict=True))
            axes = tuple(a for a, v in enumerate(holder) if v not in q)
            m = margs[holder].sum(axis=axes) if axes else margs[holder]
            kept = tuple(v for v in holder if v in q)
            out[q] = m.transpose([kept.index(v) for v in q])
        return out

    def marginal(self, variables: Sequence[Hashable]) -> np.ndarray | jax.Array:
        """Exact marginal of any subset of variables (axes in the given order).

        Eagerly: from one NumPy calibration of the junction tree, no compilation
        (:mod:`pgm_dp.inference.queries`); for many queries :meth:`marginals` shares that
        calibration. Under a JAX transformation: the junction tree of the model's cliques
        plus the query, calibrated by the traced (differentiable) pass.
        """
        query = self._query(variables)
        if not any_traced(self.log_potentials):
            return calibrated(self.junction_tree(), self.log_potentials).marginal(query)
        jt = self.junction_tree()
        if jt.containing(query) is None:
            jt = self.junction_tree(extra=(query,))
            pots = self.log_potentials + (jnp.zeros(self.domain.sizes(query)),)
        else:
            pots = self.log_potentials
        (m,), _ = clique_marginals(jt, pots, (query,))
        return m

    def log_partition(
        self, method: str | Backend = "junction_tree", **options
    ) -> float | jax.Array:
        """``log Z`` by an inference backend (as in :meth:`marginals`): exact (junction
        tree), the Bethe approximation (loopy BP) or the tree-reweighted upper bound
        (``"trw_bp"``)."""
        return get_backend(method, **options).log_partition(self)

    def unnormalized_log_prob(self, codes: np.ndarray) -> np.ndarray:
        """``sum_C theta_C(x_C)`` for each row of an encoded ``(n, d)`` code array."""
        total = np.zeros(codes.shape[0])
        for cl, table in zip(self.cliques, self.log_potentials, strict=True):
            idx = tuple(codes[:, self.domain.index(v)] for v in cl)
            total = total + np.asarray(table)[idx]
        return total

    def log_prob(self, data: Any) -> np.ndarray:
        """Exact ``log p(x)`` of each record of ``data`` (validated against the domain)."""
        codes = self.domain.encode(data)
        return self.unnormalized_log_prob(codes) - float(self.log_partition())

    def sample(
        self,
        n: int,
        rng: np.random.Generator | int | None = None,
        method: str = "exact",
        labels: bool = False,
        **options,
    ) -> pd.DataFrame:
        """``n`` samples as a DataFrame of integer codes (columns in domain order); with
        ``labels=True`` labelled variables are ``category`` columns of their labels
        (:meth:`pgm_dp.Domain.decode`).

        ``method="exact"`` samples through the junction tree; ``method="gibbs"`` runs the
        vectorised Gibbs sampler (models with cliques of size <= 2 only; ``options`` go to
        :func:`pgm_dp.inference.gibbs.gibbs_pairwise`).
        """
        if isinstance(n, bool) or int(n) != n or n < 1:
            raise ValueError(f"n must be a positive integer, got {n!r}")
        rng = as_generator(rng)
        if method == "exact":
            codes = sample_junction_tree(self.junction_tree(), self.log_potentials, int(n), rng)
        elif method == "gibbs":
            from ..inference.gibbs import gibbs_pairwise

            # Defaults: up to 1000 chains, 200 burn-in sweeps, thinning 5, enough sweeps
            # after burn-in to collect n records.
            chains = int(options.pop("n_chains", min(int(n), 1000)))
            burn = int(options.pop("burn_in", 200))
            thin = int(options.pop("thin", 5))
            sweeps = int(options.pop("n_sweeps", burn + thin * -(-int(n) // chains)))
            codes = gibbs_pairwise(
                self.domain.shape,
                tuple(tuple(self.domain.index(v) for v in c) for c in self.cliques),
                [np.asarray(t) for t in self.log_potentials],
                n_samples=int(n),
                rng=rng,
                n_chains=chains,
                n_sweeps=sweeps,
                burn_in=burn,
                thin=thin,
                **options,
            )
        else:
            raise ValueError(f"unknown method {method!r}; use 'exact' or 'gibbs'")
        if labels:
            return self.domain.decode(codes)
        return pd.DataFrame(codes, columns=list(self.domain.attributes))

    # -- pgmpy -------------------------------------------------------------------------
    @classmethod
    def from_pgmpy(cls, model, domain: Domain | None = None, **kwargs) -> MarkovRandomField:
        """From a pgmpy DiscreteMarkovNetwork, FactorGraph or DiscreteBayesianNetwork; state
        names become the domain's labels. A model without factors is a structure: give
        ``domain`` and the log-potentials are zero (see :mod:`pgm_dp.models.pgmpy_io`)."""
        domain, cliques, tables = read_pgmpy(model, domain)
        return cls(domain, cliques, tables, **kwargs)

    def to_pgmpy(self):
        """A pgmpy ``DiscreteMarkovNetwork`` with one ``DiscreteFactor`` per clique."""
        return write_pgmpy(self.domain, self.cliques, self.log_potentials)


def _rebuild(domain, cliques, tables, max_cells) -> MarkovRandomField:
    return MarkovRandomField(domain, cliques, tables, max_cells=max_cells)


def _as_table(table, clique: Clique, domain: Domain) -> jax.Array:
    if isinstance(table, jax.Array):
        arr = jnp.asarray(table, dtype=jnp.float64)
        host = None if any_traced((arr,)) else np.asarray(arr)
    else:  # host data: checked before its one copy to the device
        host = np.asarray(table, dtype=np.float64)
        arr = None
    want = domain.sizes(clique)
    shape = host.shape if arr is None else arr.shape
    if shape != want:
        raise DomainError(f"log-potential of {clique} has shape {shape}, expected {want}")
    if host is not None:  # concrete: check the values themselves
        if np.isnan(host).any() or np.isposinf(host).any():
            raise DomainError(
                f"log-potential of {clique} contains NaN or +inf (use finite values; -inf marks "
                "impossible states)"
            )
    return jnp.asarray(host) if arr is None else arr
