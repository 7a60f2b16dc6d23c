"""Named dims and coords of the posterior, in the model's language.

Each ``marginal:A,B`` site has one dim per variable (``A``, ``B``) whose coords are the
domain's category labels (the codes ``0 .. k-1`` for a variable without labels); a dim is
shared by every site that holds its variable. ``theta``, the replicated and observed
releases ``y`` share the dim ``cell``, one coord per clique cell (``"A=no,B=yes"``), so
``arviz_stats.summary`` is readable as is.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..domain import Clique, Domain
from .model import name_text, site_name, table_name

__all__ = ["dim_name", "posterior_dims"]

#: Dims that ArviZ or this layer uses already; a variable of that name gets a trailing ``_``.
RESERVED = frozenset({"chain", "draw", "cell", "laplace_cell", "count_direction"})


def dim_name(variable) -> str:
    """The dim of a variable: its name as the sites spell it (:func:`~.model.name_text`;
    ``"chain"`` and the layer's own dims get a trailing ``_``)."""
    name = name_text(variable)
    return name + "_" if name in RESERVED else name


def _coord(domain: Domain, variable) -> np.ndarray:
    labels = domain.labels_of(variable)
    if labels is None:
        return np.arange(domain.size([variable]))
    kinds = {type(v) for v in labels}
    if len(kinds) > 1:  # mixed kinds (e.g. 1 and "1"): as text, one coord dtype
        return np.array([str(v) for v in labels])
    return np.asarray(labels)


def _cell_names(domain: Domain, clique: Clique) -> list[str]:
    values = [_coord(domain, v) for v in clique]
    names = [name_text(v) for v in clique]
    return [
        ",".join(f"{n}={x}" for n, x in zip(names, cell, strict=True))
        for cell in itertools.product(*values)
    ]


def posterior_dims(domain: Domain, cliques, sites) -> tuple[dict, dict]:
    """``(dims, coords)`` for :func:`arviz_base.from_dict`: ``sites`` the names of the
    posterior's variables (the latent ones get a plain index dim)."""
    dims, coords = {}, {}
    cells = []
    for c in cliques:
        dims[site_name(c)] = dims[table_name(c)] = [dim_name(v) for v in c]
        for v in c:
            coords[dim_name(v)] = _coord(domain, v)
        cells += _cell_names(domain, c)
    coords["cell"] = np.array(cells)
    dims["theta"] = dims["y"] = ["cell"]
    if "noise_var" in sites:
        dims["noise_var"] = ["laplace_cell"]
    if "count_deviation" in sites:
        dims["count_deviation"] = ["count_direction"]
    return dims, coords
