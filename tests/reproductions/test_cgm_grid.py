import pandas as pd
import pytest

from reproductions.bernstein2017.cgm_grid import run_grid

pytestmark = pytest.mark.slow  # end-to-end runs: the second tier (pytest -m slow)


def test_grid_runs_every_cell_and_resumes(tmp_path):
    kwargs = dict(
        graphs=("tree", "chain"),
        ks=(2,),
        Ns=(300,),
        epsilons=(1.0,),
        mechanisms=("laplace", "gaussian"),
        populations=1,
        replications=1,
        learners=("nonprivate", "naive", "cgm"),
        T=4,
        progress=False,
        out_dir=tmp_path,
    )
    first = run_grid(**kwargs)
    assert len(first.summary) == 4  # 2 graphs x 2 mechanisms
    assert {"cgm/naive", "converged"} <= set(first.summary.columns)
    assert (tmp_path / "cgm_grid.png").exists()
    again = run_grid(**kwargs)  # everything is in the CSV: nothing is refitted
    pd.testing.assert_frame_equal(first.summary, again.summary)
    assert len(pd.read_csv(tmp_path / "cgm_grid_runs.csv")) == len(first.runs)
