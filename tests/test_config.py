"""Newcomer frictions: the compilation cache is on for library users (opt-out, location), and
dp-accounting's absl warnings are silenced at their source only."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CACHE_DIR = (
    "import pgm_dp.models.mrf, jax; print(jax.config.jax_compilation_cache_dir); "
    "print(jax.config.jax_persistent_cache_min_compile_time_secs)"
)


def _python(code: str, **env: str) -> list[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PGM_DP_", "JAX_COMP"))}
    environ |= {"PYTHONPATH": str(REPO), **env}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=environ, check=True
    )
    return done.stdout.split()


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_the_compilation_cache_is_on_for_library_users(tmp_path):
    folder = tmp_path / "xla"
    assert _python(CACHE_DIR, PGM_DP_CACHE_DIR=str(folder)) == [str(folder), "0.0"]
    assert folder.is_dir()
    assert _python(CACHE_DIR, XDG_CACHE_HOME=str(tmp_path))[0] == str(tmp_path / "pgm_dp" / "xla")


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_the_compilation_cache_can_be_turned_off_or_set_by_the_user(tmp_path):
    assert _python(CACHE_DIR, PGM_DP_NO_CACHE="1", PGM_DP_CACHE_DIR=str(tmp_path))[0] == "None"
    mine = str(tmp_path / "mine")
    assert _python(CACHE_DIR, JAX_COMPILATION_CACHE_DIR=mine)[0] == mine
    assert not (tmp_path / "pgm_dp").exists()


def test_import_pgm_dp_stays_light():
    code = "import sys, pgm_dp; print(sorted(m for m in ('jax', 'pandas') if m in sys.modules))"
    assert _python(code) == ["[]"]


def test_dp_accounting_warnings_are_silenced_at_their_source(caplog):
    from pgm_dp.privacy import dpsgd_epsilon

    with caplog.at_level(logging.WARNING):
        eps = dpsgd_epsilon(1.0, 0.2, 10, 1e-3)  # RDP orders near 1 fail to converge here
        logging.getLogger("absl").warning("another absl user")
    assert eps > 0
    assert not [r for r in caplog.records if "dp_accounting" in r.pathname]
    assert [r.getMessage() for r in caplog.records] == ["another absl user"]
    assert logging.getLogger().level == logging.WARNING  # the root logger: as caplog set it


@pytest.mark.slow  # over ~2 CPU s: the second tier (#38)
def test_dp_accounting_warnings_are_silenced_whoever_made_the_absl_logger():
    code = (
        "import logging; logging.getLogger('absl'); logging.basicConfig(); "  # a plain Logger
        "from pgm_dp.privacy import dpsgd_epsilon; print(dpsgd_epsilon(1.0, 0.2, 10, 1e-3) > 0)"
    )
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PGM_DP_", "JAX_COMP"))}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env=environ | {"PYTHONPATH": str(REPO)},
    )
    assert done.stdout.split() == ["True"]
    assert "_compute_log_a_frac" not in done.stderr
