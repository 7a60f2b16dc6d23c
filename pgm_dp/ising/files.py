"""One observed network from files: a graph (edge-list CSV or GML) and its node outcomes.

Node ids are compared as text (``"7"`` in the graph matches ``7`` in the outcomes), so that
CSV and GML files written by different tools agree. Every check runs before any estimate:
the outcomes must name every node of the graph exactly once and be all ±1 or all 0/1
(0 is read as -1).

>>> import tempfile, pathlib
>>> tmp = pathlib.Path(tempfile.mkdtemp())
>>> _ = (tmp / "g.csv").write_text("source,target\\na,b\\nb,c\\n")
>>> _ = (tmp / "o.csv").write_text("node,outcome\\na,1\\nb,0\\nc,1\\n")
>>> A, sigma, nodes = read_network_outcomes(tmp / "g.csv", tmp / "o.csv")
>>> nodes, sigma.tolist(), int(A.sum())
(['a', 'b', 'c'], [1, -1, 1], 4)
"""

from __future__ import annotations

from os import PathLike

import networkx as nx
import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..errors import DataValidationError

__all__ = ["read_graph", "read_outcomes", "read_network_outcomes"]


def read_graph(path: str | PathLike) -> tuple[sp.csr_array, list[str]]:
    """``(A, nodes)``: the symmetric 0/1 adjacency of an undirected simple graph and its node
    ids (text), from a ``.gml`` file or a CSV whose first two columns are the endpoints of
    one edge per row (a header row is expected). Self-loops are refused; repeated edges and
    both directions of one edge count once."""
    if str(path).lower().endswith(".gml"):
        try:
            graph = nx.read_gml(path, label="id")
        except (nx.NetworkXError, ValueError) as err:
            raise DataValidationError(f"{path}: not a readable GML graph: {err}") from None
        edges = [(str(u), str(v)) for u, v in graph.edges()]
        nodes = [str(n) for n in graph.nodes()]
    else:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        if frame.shape[1] < 2 or frame.empty:
            raise DataValidationError(f"{path}: an edge list needs two columns and a row")
        edges = list(zip(frame.iloc[:, 0].str.strip(), frame.iloc[:, 1].str.strip(), strict=True))
        nodes = list(dict.fromkeys(n for edge in edges for n in edge))
    if any(u == v for u, v in edges):
        raise DataValidationError(f"{path}: self-loops are not allowed")
    if any(not u or not v for u, v in edges):
        raise DataValidationError(f"{path}: empty node id in the edge list")
    index = {n: i for i, n in enumerate(nodes)}
    rows = np.array([index[u] for u, _ in edges] + [index[v] for _, v in edges], dtype=np.int64)
    cols = np.array([index[v] for _, v in edges] + [index[u] for u, _ in edges], dtype=np.int64)
    A = sp.coo_array((np.ones(len(rows)), (rows, cols)), shape=(len(nodes), len(nodes)))
    A = sp.csr_array(A)
    A.data[:] = 1.0  # repeated edges count once
    return A, nodes


def read_outcomes(path: str | PathLike, nodes: list[str]) -> np.ndarray:
    """The ±1 outcomes of ``nodes`` (in that order) from a CSV of ``node,outcome`` rows."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    if frame.shape[1] < 2:
        raise DataValidationError(f"{path}: outcomes need two columns, node and outcome")
    ids = frame.iloc[:, 0].str.strip()
    if ids.duplicated().any():
        raise DataValidationError(f"{path}: node {ids[ids.duplicated()].iloc[0]!r} repeated")
    missing = sorted(set(nodes) - set(ids))
    extra = sorted(set(ids) - set(nodes))
    if missing or extra:
        raise DataValidationError(
            f"{path}: node ids differ from the graph's (missing {missing[:5]}, "
            f"not in the graph {extra[:5]})"
        )
    values = pd.to_numeric(frame.iloc[:, 1].str.strip(), errors="coerce")
    seen = set(values.dropna().unique())
    if values.isna().any() or not (seen <= {-1, 1} or seen <= {0, 1}):
        raise DataValidationError(f"{path}: outcomes must be all ±1 or all 0/1, got {seen}")
    sigma = np.where(values.to_numpy() > 0, 1, -1).astype(np.int64)
    order = pd.Series(np.arange(len(ids)), index=ids.to_numpy())
    return sigma[order[nodes].to_numpy()]


def read_network_outcomes(graph: str | PathLike, outcomes: str | PathLike):
    """``(A, sigma, nodes)`` of :func:`read_graph` and :func:`read_outcomes`."""
    A, nodes = read_graph(graph)
    return A, read_outcomes(outcomes, nodes), nodes
