import pandas as pd
import pytest

from reproductions.bernstein2017.fig2 import claims, run_fig2

pytestmark = pytest.mark.slow  # end-to-end runs: the second tier (pytest -m slow)


def _runs(rows):
    keys = ["graph", "N", "epsilon", "learner", "kl", "seconds"]
    return pd.DataFrame([dict(zip(keys, r, strict=True)) for r in rows])


def test_claims_count_cells_and_compare_with_the_best_mbi_count():
    runs = _runs(
        [
            ("chain", 100, 0.1, "naive", 4.0, 1.0),
            ("chain", 100, 0.1, "cgm", 1.0, 3.0),
            ("chain", 100, 0.1, "mbi300", 2.5, 1.0),
            ("chain", 100, 0.1, "mbi1000", 5.0, 2.0),
            ("chain", 1000, 0.1, "naive", 1.0, 1.0),
            ("chain", 1000, 0.1, "cgm", 2.0, 5.0),
            ("chain", 1000, 0.1, "mbi300", 1.5, 1.0),
            ("chain", 1000, 0.1, "mbi1000", 3.0, 2.0),
        ]
    )
    c = claims(runs)
    assert c["cgm_le_naive"] == 0.5 and c["cells"] == 2
    assert c["cgm_over_best_mbi"]["('chain', 100, 0.1)"] == pytest.approx(0.4)
    assert c["cgm_le_half_mbi_noisy_cells"] == 1.0  # N=100 is the noise-dominated cell
    assert c["cgm_le_mbi_other_cells"] == 0.0  # 2.0 > 1.5 at N=1000
    assert c["time_ratio"]["chain"]["cgm"] == pytest.approx(4.0)  # medians: 4 s / 1 s
    assert c["time_ratio_total"]["chain"]["cgm"] == pytest.approx(4.0)  # totals: 8 s / 2 s
    assert c["time_ratio_total"]["chain"]["mbi1000"] == pytest.approx(2.0)


def test_run_fig2_writes_and_resumes(tmp_path):
    kw = dict(
        graphs=("chain",),
        Ns=(300,),
        epsilons=(1.0,),
        populations=1,
        replications=1,
        T=4,
        k=2,
        progress=False,
        out_dir=tmp_path,
    )
    first = run_fig2(learners=("naive",), **kw)
    assert (tmp_path / "fig2_runs.csv").exists() and (tmp_path / "fig2.png").exists()
    again = run_fig2(learners=("naive",), **kw)  # nothing new to run
    pd.testing.assert_frame_equal(first.runs.reset_index(drop=True), again.runs)
    both = run_fig2(learners=("naive", "cgm"), **kw)  # only CGM is run and appended
    assert sorted(both.runs.learner) == ["cgm", "naive"]
    assert both.claims["cells"] == 1


def test_a_resume_that_adds_a_column_rewrites_the_csv_under_one_header(tmp_path):
    kw = dict(graphs=("chain",), Ns=(300,), epsilons=(1.0,), populations=1, replications=1)
    kw.update(T=4, k=2, progress=False, out_dir=tmp_path)
    run_fig2(learners=("naive",), **kw)
    path = tmp_path / "fig2_runs.csv"
    old = pd.read_csv(path).drop(columns="converged")  # as written by an older version
    old.to_csv(path, index=False)
    run_fig2(learners=("naive", "cgm"), **kw)
    table = pd.read_csv(path)  # one header for all rows (an append would misalign them)
    assert sorted(table.learner) == ["cgm", "naive"]
    assert table.set_index("learner").loc["cgm", "converged"]


def test_a_resume_reuses_only_rows_of_the_same_setting(tmp_path):
    kw = dict(graphs=("chain",), Ns=(300,), T=4, k=2, learners=("naive",), progress=False)
    first = run_fig2(epsilons=(1.0,), populations=1, replications=1, out_dir=tmp_path, **kw)
    assert set(first.runs[["T", "k", "seed"]].itertuples(index=False)) == {(4, 2, 0)}
    # More epsilons, populations and another seed: nothing of the first run is reused.
    more = run_fig2(
        epsilons=(0.5, 1.0), populations=2, replications=1, seed=7, out_dir=tmp_path, **kw
    )
    assert len(more.runs) == 4 and set(more.runs.seed) == {7}
    # A partial block (population 1 lost) is run again whole, not duplicated.
    path = tmp_path / "fig2_runs.csv"
    table = pd.read_csv(path)
    table[(table.seed == 0) | (table.population == 0)].to_csv(path, index=False)
    again = run_fig2(
        epsilons=(0.5, 1.0), populations=2, replications=1, seed=7, out_dir=tmp_path, **kw
    )
    pd.testing.assert_frame_equal(
        again.runs.drop(columns="seconds")
        .sort_values(["epsilon", "population"])
        .reset_index(drop=True),
        more.runs.drop(columns="seconds")
        .sort_values(["epsilon", "population"])
        .reset_index(drop=True),
    )
    assert len(pd.read_csv(path)) == 1 + 4  # the first run's row and the new block


def test_a_csv_without_the_setting_columns_is_refused(tmp_path):
    run = dict(graphs=("chain",), Ns=(300,), epsilons=(1.0,), populations=1, replications=1)
    first = run_fig2(T=4, k=2, learners=("naive",), progress=False, out_dir=tmp_path, **run)
    first.runs.drop(columns=["T", "k", "seed"]).to_csv(tmp_path / "fig2_runs.csv", index=False)
    with pytest.raises(ValueError, match="older pgm_dp"):
        run_fig2(T=4, k=2, learners=("naive",), progress=False, out_dir=tmp_path, **run)
