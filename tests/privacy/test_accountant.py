"""Accountant: odometer semantics, refusals that record nothing, mixed notions."""

from __future__ import annotations

import copy
import math
import sys
import threading

import pandas as pd
import pytest

from pgm_dp.errors import BudgetExceededError, PrivacyParameterError
from pgm_dp.privacy import ZCDP, Accountant, ApproxDP, Charge, PureDP, zcdp_to_approx_dp
from pgm_dp.privacy.noise import zcdp_rho_within


def test_pure_accountant_basic():
    acc = Accountant(PureDP(1.0))
    assert acc.spent.epsilon == 0.0 and acc.remaining.epsilon == 1.0
    rec = acc.charge(PureDP(0.4), what="A", mechanism="laplace", scale=2.5)
    assert rec == Charge("A", "laplace", 2.5, PureDP(0.4))
    acc.charge(PureDP(0.6), what="B", mechanism="laplace")
    assert acc.spent.epsilon == pytest.approx(1.0) and acc.remaining.epsilon == 0.0
    assert [c.what for c in acc.charges] == ["A", "B"]
    with pytest.raises(BudgetExceededError) as err:
        acc.charge(PureDP(0.01), what="C", mechanism="laplace")
    msg = str(err.value)
    assert "spent" in msg and "asked" in msg and "total" in msg and "'C'" in msg
    assert len(acc.charges) == 2 and acc.spent.epsilon == pytest.approx(1.0)


def test_refused_charge_records_nothing_and_check():
    acc = Accountant(PureDP(1.0))
    acc.charge(PureDP(0.7), what="x", mechanism="m")
    assert acc.can_afford(PureDP(0.3)) and not acc.can_afford(PureDP(0.31))
    with pytest.raises(BudgetExceededError):
        acc.check(PureDP(0.5))
    with pytest.raises(BudgetExceededError):
        acc.charge(PureDP(0.5), what="y", mechanism="m")
    assert acc.spent == PureDP(0.7) and len(acc.charges) == 1


def test_many_small_charges_fit_exactly():
    acc = Accountant(PureDP(1.0))
    for i in range(10):
        acc.charge(PureDP(0.1), what=str(i), mechanism="m")
    acc3 = Accountant(ZCDP(1.0))
    for i in range(3):
        acc3.charge(ZCDP(1 / 3), what=str(i), mechanism="m")
    assert not acc.can_afford(PureDP(1e-9))


def test_pure_accountant_refuses_other_notions():
    acc = Accountant(PureDP(1.0))
    with pytest.raises(PrivacyParameterError):
        acc.charge(ZCDP(0.01), what="x", mechanism="m")
    with pytest.raises(PrivacyParameterError):
        acc.charge(ApproxDP(0.1, 1e-6), what="x", mechanism="m")
    acc.charge(ApproxDP(0.1, 0.0), what="x", mechanism="m")  # delta = 0 is pure
    assert acc.spent.epsilon == pytest.approx(0.1)
    with pytest.raises(PrivacyParameterError):
        acc.charge(0.1, what="x", mechanism="m")  # type: ignore[arg-type]


def test_zcdp_accountant_converts_pure():
    acc = Accountant(ZCDP(1.0))
    acc.charge(PureDP(1.0), what="a", mechanism="laplace")  # 0.5
    acc.charge(ZCDP(0.25), what="b", mechanism="gaussian")
    assert acc.spent == ZCDP(0.75) and acc.remaining.rho == pytest.approx(0.25)
    with pytest.raises(PrivacyParameterError):
        acc.charge(ApproxDP(0.1, 1e-9), what="c", mechanism="m")
    with pytest.raises(BudgetExceededError):
        acc.charge(PureDP(0.8), what="d", mechanism="laplace")  # 0.32 > 0.25
    assert len(acc.charges) == 2


def test_approx_accountant_mixed_rule():
    total = ApproxDP(2.0, 1e-5)
    acc = Accountant(total)
    acc.charge(PureDP(0.3), what="p", mechanism="laplace")
    acc.charge(ApproxDP(0.2, 4e-6), what="a", mechanism="gaussian")
    assert acc.spent.epsilon == pytest.approx(0.5) and acc.spent.delta == pytest.approx(4e-6)
    assert acc.remaining.epsilon == pytest.approx(1.5)
    acc.charge(ZCDP(0.02), what="z", mechanism="gaussian")
    want = 0.5 + zcdp_to_approx_dp(0.02, 1e-5 - 4e-6).epsilon
    assert acc.spent.epsilon == pytest.approx(want)
    assert acc.spent.delta == pytest.approx(1e-5)
    assert acc.remaining.delta == pytest.approx(6e-6)
    # lemma_2_14 conversion spends more for the same charges
    acc2 = Accountant(total, conversion="lemma_2_14")
    for c in acc.charges:
        acc2.charge(c.cost, what=c.what, mechanism=c.mechanism)
    assert acc2.spent.epsilon > acc.spent.epsilon


def test_approx_accountant_zcdp_needs_delta():
    acc = Accountant(ApproxDP(1.0, 1e-6))
    acc.charge(ApproxDP(0.1, 1e-6), what="a", mechanism="m")  # uses all delta
    with pytest.raises(BudgetExceededError):
        acc.charge(ZCDP(1e-6), what="z", mechanism="m")
    assert len(acc.charges) == 1


def test_report_and_str():
    acc = Accountant(ApproxDP(1.0, 1e-6))
    acc.charge(PureDP(0.1), what="counts", mechanism="laplace", scale=10.0)
    acc.charge(ZCDP(0.001), what="edges", mechanism="gaussian", scale=3.0)
    df = acc.report()
    assert isinstance(df, pd.DataFrame) and list(df["what"]) == ["counts", "edges"]
    assert df.loc[0, "epsilon"] == 0.1 and math.isnan(df.loc[0, "rho"])
    assert df.loc[1, "rho"] == 0.001
    text = str(acc)
    assert "counts" in text and "edges" in text and "laplace" in text
    assert "Accountant(" in repr(acc)
    assert Accountant(PureDP(1.0)).report().empty


def test_bad_accountant_arguments():
    with pytest.raises(PrivacyParameterError):
        Accountant(1.0)  # type: ignore[arg-type]
    with pytest.raises(PrivacyParameterError):
        Accountant(ApproxDP(1.0, 1e-6), conversion="nope")  # type: ignore[arg-type]


def _race(acc, cost, threads):
    """``threads`` threads charge ``cost`` once each, released together by a barrier."""
    barrier = threading.Barrier(threads)

    def one():
        barrier.wait()
        try:
            acc.charge(cost, what="race", mechanism="gaussian")
        except BudgetExceededError:
            pass

    workers = [threading.Thread(target=one) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


@pytest.mark.parametrize("kind", ["zcdp_in_approx", "pure"])
def test_concurrent_charges_never_overspend(kind):
    """32 threads charge one accountant whose budget fits exactly k = 3 of the charges, 20
    times over, with a tiny thread switch interval: exactly k charges are recorded and the
    total is never exceeded (deterministic given atomic charging)."""
    k = 3
    if kind == "pure":
        total, cost = PureDP(1.0), PureDP(0.3)
    else:
        total = ApproxDP(1.0, 1e-6)
        cost = ZCDP(zcdp_rho_within(total) / k * 0.99)
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(20):
            acc = Accountant(total)
            _race(acc, cost, 32)
            assert len(acc.charges) == k
            assert acc.spent.epsilon <= total.epsilon * (1 + 1e-12)
    finally:
        sys.setswitchinterval(old)


def test_accountant_copies_keep_their_ledger():
    acc = Accountant(PureDP(1.0))
    acc.charge(PureDP(0.5), what="a", mechanism="laplace")
    twin = copy.deepcopy(acc)
    twin.charge(PureDP(0.5), what="b", mechanism="laplace")
    assert len(acc.charges) == 1 and len(twin.charges) == 2
