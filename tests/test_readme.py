"""The README's Python examples run as written (the learners' block uses the privacy block's
``truth``, ``data`` and ``rel``, so it runs after it)."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_readme_python_examples_run():
    blocks = _blocks()
    privacy = [b for b in blocks if "release_marginals" in b]
    learners = [b for b in blocks if "CGMEM" in b]
    others = [b for b in blocks if b not in privacy + learners]
    assert privacy and learners and others
    namespace: dict = {}
    for block in others + privacy + learners:
        exec(compile(block, str(README), "exec"), namespace)
    assert namespace["fit"].model.cliques == namespace["truth"].cliques
