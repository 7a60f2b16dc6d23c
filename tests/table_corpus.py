"""A generated corpus of small pandas tables with every column kind users bring, for
``tests/test_table_corpus.py``: integer codes, 0/1 flags, booleans with and without missing
cells, floats, numeric strings, pandas categoricals, wide text, constant and all-missing
columns, repeated ids, and column names such as ``self``, ``index``, an integer and a tuple.

Each table is a few columns of ``N`` records, seeded, with some dependence between columns
so that a fit has something to select."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

#: Records per table: small, so that the corpus runs in the default tier.
N = 300


def _codes(rng: np.random.Generator) -> pd.DataFrame:
    year = rng.integers(1984, 1989, N)
    return pd.DataFrame({
        "year": year,
        "flag": (rng.random(N) < 0.2 + 0.1 * (year - 1984)).astype(np.int64),
        "children": rng.integers(0, 5, N),
        "grade": rng.choice([3, 2, 1], N, p=[0.5, 0.3, 0.2]),
    })  # fmt: skip


def _booleans(rng: np.random.Generator) -> pd.DataFrame:
    smoker = rng.random(N) < 0.3
    maybe = pd.Series(rng.random(N) < 0.5, dtype=object)
    maybe[rng.random(N) < 0.1] = None
    flag = pd.Series((rng.random(N) < 0.4).astype(float))
    flag[rng.random(N) < 0.1] = np.nan  # a 0/1 column with missing cells: floats
    return pd.DataFrame({"smoker": smoker, "maybe": maybe, "flag": flag,
                         "sex": rng.choice(["F", "M"], N)})  # fmt: skip


def _numbers(rng: np.random.Generator) -> pd.DataFrame:
    income = rng.lognormal(10, 0.5, N)
    income[rng.random(N) < 0.05] = np.nan
    code = rng.choice(["01", "02", "10", "12"], N)  # numeric strings: categories
    size = pd.Categorical(rng.choice(["S", "M", "L"], N), categories=["S", "M", "L"])
    return pd.DataFrame({"income": income, "code": code, "size": size,
                         "age": rng.integers(18, 90, N)})  # fmt: skip


def _awkward(rng: np.random.Generator) -> pd.DataFrame:
    return pd.DataFrame({
        "note": [f"free text {i} {rng.integers(10**6)}" for i in range(N)],  # wide text
        "constant": np.full(N, 7),
        "empty": np.full(N, np.nan),
        "person": np.repeat(np.arange(N // 3), 3),  # repeated ids
        "region": rng.choice(["north", "south"], N),
        "kind": rng.choice(["a", "b", "c"], N),
    })  # fmt: skip


def _names(rng: np.random.Generator) -> pd.DataFrame:
    return pd.DataFrame({
        "self": rng.choice(["x", "y"], N),
        "index": rng.integers(0, 3, N),
        0: rng.choice(["u", "v"], N),
        "data": rng.random(N) < 0.5,
    })  # fmt: skip


def _tuple_name(rng: np.random.Generator) -> pd.DataFrame:
    return pd.DataFrame({("a", "b"): rng.choice(["x", "y"], N), "c": rng.choice(["p", "q"], N)})


#: ``{name: make(rng)}``: the corpus's tables.
TABLES: dict[str, Callable[[np.random.Generator], pd.DataFrame]] = {
    "codes": _codes,
    "booleans": _booleans,
    "numbers": _numbers,
    "awkward": _awkward,
    "names": _names,
    "tuple_name": _tuple_name,
}


def table(name: str, seed: int = 0) -> pd.DataFrame:
    """The corpus table ``name``, drawn with ``seed``."""
    return TABLES[name](np.random.default_rng(seed))
