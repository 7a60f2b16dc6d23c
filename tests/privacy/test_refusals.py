"""Issue #16 (3): refuse before allocating or spending; refuse what makes no sense."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from pgm_dp import Domain, ModelTooLargeError, sufficient_statistics
from pgm_dp.errors import DomainError, PrivacyParameterError
from pgm_dp.privacy import Accountant, ApproxDP, PureDP, release_marginals
from pgm_dp.tables import contingency_table

DATA = np.array([[0, 1, 0], [1, 0, 1]])


@pytest.mark.parametrize("sizes", [[2**18, 2**18, 2], [2**32, 2**32, 2], [2**40, 2**24, 2]])
def test_huge_tables_refused_and_nothing_spent(sizes):  # 2^36, 2^64, 2^64 cells
    dom = Domain(["A", "B", "C"], sizes)
    acc = Accountant(PureDP(1.0))
    with pytest.raises(ModelTooLargeError):
        release_marginals(DATA, [("A", "B")], dom, budget=PureDP(0.5), accountant=acc)
    assert acc.charges == ()
    with pytest.raises(ModelTooLargeError):
        sufficient_statistics(DATA, [("A", "B")], dom)
    with pytest.raises(ModelTooLargeError):
        contingency_table(DATA, [0, 1], sizes[:2])


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_huge_table_refused_under_a_small_address_space():
    """In a subprocess with RLIMIT_AS = current usage + 256 MiB: ModelTooLargeError, not
    MemoryError (which the 2^36-cell table gave before)."""
    code = textwrap.dedent(
        """
        import resource
        import numpy as np
        from pgm_dp import Domain, ModelTooLargeError
        from pgm_dp.privacy import PureDP, release_marginals
        vm = [int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmSize")][0]
        lim = vm * 1024 + 256 * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
        dom = Domain(["A", "B"], [2**18, 2**18])
        try:
            release_marginals(np.array([[0, 1]]), [("A", "B")], dom, budget=PureDP(1.0))
        except ModelTooLargeError:
            print("REFUSED")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "REFUSED" in out.stdout, out.stdout + out.stderr


@pytest.mark.parametrize("cliques", [[("A", "B"), ("A", "B")], [("A", "B"), ("B", "A")]])
def test_repeated_cliques_refused_and_nothing_spent(cliques):
    dom = Domain(["A", "B", "C"], [2, 2, 2])
    acc = Accountant(PureDP(1.0))
    with pytest.raises(DomainError):
        release_marginals(DATA, cliques, dom, budget=PureDP(0.5), accountant=acc)
    assert acc.charges == ()


@pytest.mark.parametrize("bad", ["1", b"1", True, None, [1.0]])
def test_budgets_refuse_non_numbers(bad):
    with pytest.raises(PrivacyParameterError):
        PureDP(bad)
    with pytest.raises(PrivacyParameterError):
        ApproxDP(1.0, bad if bad is not None else "x")


def test_accountant_of_wrong_type_is_a_value_error_naming_it():
    dom = Domain(["A", "B", "C"], [2, 2, 2])
    with pytest.raises(PrivacyParameterError, match="accountant"):
        release_marginals(DATA, [("A",)], dom, budget=PureDP(1.0), accountant="x")
