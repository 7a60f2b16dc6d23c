"""Private clique selection (MST, McKenna et al. 2021): budget charged, tree found."""

import networkx as nx
import numpy as np
import pytest

from pgm_dp import Accountant, BudgetExceededError, PrivacyParameterError, PureDP
from pgm_dp.models import third_order_chain
from pgm_dp.select import select_cliques


def test_selection_is_a_spanning_tree_and_charges_the_budget():
    truth = third_order_chain(6, 3, rng=0)
    data = truth.sample(20_000, rng=1)
    acct = Accountant(PureDP(1.0))
    sel = select_cliques(data, PureDP(1.0), truth.domain, rng=2, accountant=acct)
    assert nx.is_tree(nx.Graph(list(sel.cliques)))
    assert acct.spent.epsilon == pytest.approx(1.0)
    edges = {frozenset(c) for c in truth.cliques if len(c) == 2}
    assert sum(frozenset(c) in edges for c in sel.cliques) >= 4  # strong chain links found
    with pytest.raises(BudgetExceededError):
        select_cliques(data, PureDP(0.5), truth.domain, rng=2, accountant=acct)
    with pytest.raises(PrivacyParameterError):
        select_cliques(data, PureDP(1.0), truth.domain, one_way_fraction=1.0)


def test_with_one_way_joins_the_selection_tables():
    from pgm_dp.models import third_order_chain
    from pgm_dp.privacy import release_marginals
    from pgm_dp.select import with_one_way

    truth = third_order_chain(4, 2, rng=0)
    data = truth.sample(2000, rng=1)
    sel = select_cliques(data, PureDP(0.5), truth.domain, rng=2)
    rel = release_marginals(data, sel.cliques, truth.domain, budget=PureDP(0.5), rng=3)
    both = with_one_way(sel, rel)
    assert both.cliques == sel.one_way.cliques + rel.cliques
    assert both.budget == PureDP(1.0)  # the whole selection 0.5 (it chose the cliques) + 0.5
    assert both.total_source == "estimate"  # pooled over the one-way and clique tables
    assert np.array_equal(both.noisy[("X0",)], sel.one_way.noisy[("X0",)])
