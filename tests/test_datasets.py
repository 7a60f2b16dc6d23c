"""The shipped UCI Adult data: shape, domain, codes in range, column selection."""

from __future__ import annotations

import json
from importlib import resources

import numpy as np
import pytest

from pgm_dp import Domain
from pgm_dp.datasets import ADULT_ATTRIBUTES, load_adult
from pgm_dp.errors import DomainError


def test_load_adult_full():
    df, dom = load_adult()
    assert df.shape == (48842, 14)
    assert tuple(df.columns) == ADULT_ATTRIBUTES == dom.attributes
    raw = json.loads(resources.files("pgm_dp").joinpath("data", "adult-domain.json").read_text())
    assert dom == Domain.from_dict(raw)
    codes = df.to_numpy()
    assert codes.dtype == np.int64
    assert (codes >= 0).all() and (codes < np.array(dom.shape)).all()
    assert set(df["income>50K"].unique()) == {0, 1}


def test_load_adult_columns_keep_order():
    df, dom = load_adult(["race", "age"])
    assert list(df.columns) == ["race", "age"]
    assert dom == Domain(["race", "age"], [5, 85])
    full, _ = load_adult()
    assert np.array_equal(df.to_numpy(), full[["race", "age"]].to_numpy())


@pytest.mark.parametrize("columns", [["sex", "nope"], ["sex", "sex"], []])
def test_load_adult_bad_columns(columns):
    with pytest.raises(DomainError):
        load_adult(columns)
