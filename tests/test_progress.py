"""The progress hook: learners report solver iterations; compare's bar shows them."""

from pgm_dp._progress import progress_hook, tick
from pgm_dp.compare.graphs import _iteration_postfix
from pgm_dp.learners import CGMEM, NaiveMLE
from pgm_dp.models import third_order_chain
from pgm_dp.privacy import PureDP, release_marginals


def test_learners_tick_once_per_iteration():
    truth = third_order_chain(4, 2, rng=0)
    release = release_marginals(truth.sample(500, rng=1), truth, budget=PureDP(1.0), rng=2)
    seen: dict[str, int] = {}
    with progress_hook(lambda what, n: seen.__setitem__(what, seen.get(what, 0) + n)):
        naive = NaiveMLE().fit(release, truth)
        assert seen["mle"] == naive.info["iterations"]
        cgm = CGMEM().fit(release, truth)
    assert seen["cgm"] == cgm.info["iterations"] and seen["mle"] >= naive.info["iterations"]
    tick("cgm")  # outside the block: no hook
    assert seen["cgm"] == cgm.info["iterations"]


def test_compare_postfix_counts_within_a_fit():
    class Bar:
        n = 0
        text = ""

        def set_postfix_str(self, text):
            self.text = text

    bar = Bar()
    hook = _iteration_postfix(bar, every=0.0)
    hook("cgm", 1)
    hook("cgm", 2)
    assert bar.text == "cgm 3 it"
    bar.n = 1  # the next fit starts counting again
    hook("psgd", 5)
    assert bar.text == "psgd 5 it"


def test_progress_bars_without_tqdm_are_silent(monkeypatch, capsys):
    import sys

    from pgm_dp import _progress

    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # as if tqdm were not installed
    bar = _progress.tqdm(total=3, desc="x", disable=False)
    bar.update(2)
    bar.set_postfix_str("cgm 3 it")
    bar.close()
    assert bar.n == 2 and list(_progress.tqdm(range(3), desc="y")) == [0, 1, 2]
    with _progress.tqdm(total=1) as inner:
        inner.update()
    assert capsys.readouterr() == ("", "")
