"""The package's shape: layers import only downward, no import cycles, small modules and
functions (the limits of the contributor guide); the reproductions stay outside the package."""

from __future__ import annotations

import ast
import fnmatch
import pathlib
import re
import tomllib

import networkx as nx

import pgm_dp

ROOT = pathlib.Path(pgm_dp.__file__).parent
REPRODUCTIONS = ROOT.parent / "reproductions"
LAYER = {name: i for i, names in enumerate(pgm_dp.LAYERS) for name in names}


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: pathlib.Path) -> set[str]:
    """pgm_dp modules imported anywhere in ``path`` (relative imports resolved)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found |= {f"{target}.{a.name}" for a in node.names} | {target}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    modules = {_module_name(p) for p in ROOT.rglob("*.py")}
    return {m for m in found if m in modules and m != name}


def _graph() -> nx.DiGraph:
    g = nx.DiGraph()
    for path in ROOT.rglob("*.py"):
        g.add_node(_module_name(path))
        for target in _imports(path):
            g.add_edge(_module_name(path), target)
    return g


def _layer(module: str) -> int | None:
    """The layer of the longest entry of ``LAYERS`` that ``module`` is in (``prepare._dask``
    before ``prepare``); ``None`` for the root package, the facade."""
    parts = module.split(".")[1:]
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in LAYER:
            return LAYER[".".join(parts[:n])]
    return None


def test_every_module_has_a_layer():
    for module in _graph():
        assert module == "pgm_dp" or _layer(module) is not None, module


def test_no_module_imports_upward():
    upward = [
        (a, b)
        for a, b in _graph().edges
        if _layer(a) is not None and _layer(b) is not None and _layer(b) > _layer(a)
    ]
    assert not upward, upward


def test_no_import_cycles():
    g = _graph()
    g.remove_node("pgm_dp")  # the facade re-exports every layer
    # a package's __init__ re-exporting its own modules is not a cycle of the design
    own = [(a, b) for a, b in g.edges if b.startswith(a + ".")]
    g.remove_edges_from(own)
    assert not list(nx.simple_cycles(g)), list(nx.simple_cycles(g))[:5]


def test_modules_and_functions_are_small():
    long_modules, long_functions = [], []
    for path in sorted([*ROOT.rglob("*.py"), *REPRODUCTIONS.rglob("*.py")]):
        text = path.read_text()
        if text.count("\n") > 500:
            long_modules.append(path.name)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if node.end_lineno - node.lineno + 1 > 80:
                    long_functions.append(f"{path.name}:{node.name}")
    assert not long_modules, long_modules
    assert not long_functions, long_functions


BAYES = ROOT / "bayes"


def _is_jit(node: ast.AST) -> bool:
    """A call of ``jax.jit``, ``jit`` or ``jit_program``."""
    func = node.func if isinstance(node, ast.Call) else None
    name = getattr(func, "attr", None) or getattr(func, "id", None)
    return name in ("jit", "jit_program")


def test_the_posterior_keeps_no_function_tables():
    """The posterior's compiled functions are one named bundle
    (:class:`~pgm_dp.bayes.compiled.CompiledFunctions`): no jitted function is a value of a
    dict literal or stored under a key (``fns["nuts", ...] = jax.jit(...)``)."""
    found = []
    for path in sorted(BAYES.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Dict) and any(_is_jit(v) for v in node.values):
                found.append(f"{path.name}:{node.lineno}")
            if isinstance(node, ast.Assign) and _is_jit(node.value):
                if any(isinstance(t, ast.Subscript) for t in node.targets):
                    found.append(f"{path.name}:{node.lineno}")
    assert not found, found


def test_the_posterior_names_its_states():
    """The posterior passes named states, not tuples read by position: no function in
    ``bayes/`` returns or binds a bare tuple of four or more values, and nothing is read at
    a constant position 2 or further (a shape's entries aside)."""
    found = []
    for path in sorted(BAYES.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            value = node.value if isinstance(node, ast.Return | ast.Assign) else None
            single = not isinstance(node, ast.Assign) or isinstance(node.targets[0], ast.Name)
            if isinstance(value, ast.Tuple) and len(value.elts) >= 4 and single:
                found.append(f"{path.name}:{node.lineno} a tuple of {len(value.elts)}")
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                index, of = node.slice.value, getattr(node.value, "attr", None)
                if isinstance(index, int) and index >= 2 and of != "shape":
                    found.append(f"{path.name}:{node.lineno} read at [{index}]")
    assert not found, found


def test_the_posteriors_states_are_named_types():
    """The posterior's problem, covariances, compiled functions and fit are NamedTuples
    (pytrees with named fields); its options are frozen dataclasses."""
    from dataclasses import fields, is_dataclass

    from pgm_dp.bayes import compiled, fit, nuts, problem

    named = [
        problem.PosteriorProblem,
        problem.ExactCovariance,
        problem.FrozenCovariance,
        problem.LatentCounts,
        compiled.CompiledFunctions,
        fit.PosteriorFit,
        nuts.RunSettings,
        nuts.Draws,
    ]
    assert all(issubclass(t, tuple) and hasattr(t, "_fields") for t in named)
    for options in (problem.ModelOptions, fit.FitOptions):
        assert is_dataclass(options) and options.__dataclass_params__.frozen
        assert fields(options)


def _imported_names(path: pathlib.Path) -> set[str]:
    """Modules ``path`` imports: import statements and ``import_module("...")`` calls."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and not node.level:
            found.add(node.module or "")
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module":
            found |= {a.value for a in node.args if isinstance(a, ast.Constant)}
    return found


def test_the_package_never_imports_the_reproductions():
    offenders = [
        (str(path.relative_to(ROOT)), name)
        for path in ROOT.rglob("*.py")
        for name in _imported_names(path)
        if isinstance(name, str) and name.split(".")[0] == "reproductions"
    ]
    assert not offenders, offenders
    assert "experiments" not in LAYER and not (ROOT / "experiments").exists()


def test_the_wheel_holds_the_package_alone_and_no_plotting_stack():
    project = tomllib.loads((ROOT.parent / "pyproject.toml").read_text())
    include = project["tool"]["setuptools"]["packages"]["find"]["include"]
    assert any(fnmatch.fnmatch("pgm_dp.cli", pattern) for pattern in include)
    assert not any(fnmatch.fnmatch("reproductions", pattern) for pattern in include)
    needs = {re.split(r"[<>=!~\[; ]", d)[0] for d in project["project"]["dependencies"]}
    # arviz (the meta-package) and arviz-plots pull matplotlib; arviz-base/-stats do not
    assert needs.isdisjoint({"matplotlib", "tqdm", "arviz", "arviz-plots", "bokeh", "plotly"})
    extras = project["project"]["optional-dependencies"]
    for extra in ("plot", "test"):
        assert any(d.startswith("matplotlib") for d in extras[extra])
        assert any(d.startswith("tqdm") for d in extras[extra])


def test_a_module_listed_below_its_folder_takes_that_layer():
    """A dotted entry of ``LAYERS`` (a module inside a folder) gives that module its own
    layer, not its folder's; the facade has none."""
    dotted = [name for name in LAYER if "." in name]
    for name in dotted:
        assert _layer(f"pgm_dp.{name}") == LAYER[name], name
    assert _layer("pgm_dp") is None


def test_the_flat_table_layout_sits_below_inference_and_models():
    """``tables`` (the flat layout, NumPy only) is shared by inference, the models and the
    privacy layer, so it sits below all three."""
    below = _layer("pgm_dp.tables")
    for user in ("pgm_dp.inference.loopy_bp", "pgm_dp.models.gauge", "pgm_dp.privacy.release"):
        assert below < _layer(user), user


def test_selection_sits_above_the_learners_and_the_privacy_layer():
    """AIM and MST call the learners (their estimators) and the mechanisms; nothing in
    ``privacy`` or ``learners`` imports them."""
    assert _layer("pgm_dp.privacy.release") < _layer("pgm_dp.learners.mle")
    assert _layer("pgm_dp.learners.mle") < _layer("pgm_dp.select.aim")
    assert _layer("pgm_dp.select.aim") < _layer("pgm_dp.workflow")
    assert not (ROOT / "privacy" / "select").exists()


def test_private_names_stay_in_their_package():
    """A ``_name`` is imported only within its own package (folder): across packages,
    modules share public names (``bayes.ising`` once imported ``ising.prising._fields``)."""
    crossing = []
    for path in sorted(ROOT.rglob("*.py")):
        name = _module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or not (
                node.level or (node.module or "").startswith("pgm_dp")
            ):
                continue
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            private = [a.name for a in node.names if a.name.startswith("_")]
            if private and not (target == package or target.rpartition(".")[0] == package):
                crossing.append(f"{name} imports {private} from {target}")
    assert not crossing, crossing


def _scripts() -> list[pathlib.Path]:
    """The benchmarks and the reproductions: scripts outside the package that import it."""
    bench = sorted((ROOT.parent / "benchmarks").glob("*.py"))
    return bench + sorted(REPRODUCTIONS.rglob("*.py"))


def test_scripts_import_only_names_the_package_has():
    """A module or name moved inside the package breaks no benchmark or reproduction
    silently: every ``from pgm_dp... import name`` in them resolves."""
    import importlib

    missing = []
    for path in _scripts():
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.ImportFrom) and not node.level and node.module):
                continue
            if node.module.split(".")[0] != "pgm_dp":
                continue
            try:
                module = importlib.import_module(node.module)
            except ModuleNotFoundError:
                missing.append(f"{path.name}: {node.module}")
                continue
            for alias in node.names:
                if not hasattr(module, alias.name):
                    try:
                        importlib.import_module(f"{node.module}.{alias.name}")
                    except ModuleNotFoundError:
                        missing.append(f"{path.name}: {node.module}.{alias.name}")
    assert not missing, missing


def _source_lines(pattern: str, *, outside: tuple[str, ...]) -> list[str]:
    """``path:line`` of every line of the package that matches ``pattern``, in the modules
    not named in ``outside`` (paths relative to the package, ``/``-separated)."""
    rx = re.compile(pattern)
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in outside:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if rx.search(line):
                found.append(f"{rel}:{n}")
    return found


def test_budget_types_are_switched_on_only_where_their_algebra_lives():
    """Call sites ask a budget (``notion``, ``amount``, ``split``, ``scale_for``, ...) or
    refuse a type with ``require_budget``; only the budget module and the accountant (which
    composes notions) look at the type itself (#38)."""
    switches = _source_lines(
        r"isinstance\([^)]*\b(PureDP|ZCDP|ApproxDP)\b|type\([^)]*\) is (PureDP|ZCDP|ApproxDP)\b",
        outside=("privacy/budget.py", "privacy/accountant.py"),
    )
    assert not switches, switches


def test_notion_strings_are_compared_only_where_their_algebra_lives():
    """A notion's constants and formulas live on its budget type (``is_pure``,
    ``default_mechanism``, ``noise_scale``, ``selection_cost``, ... and ``notion_type``):
    no ``== "pure"``, ``!= "zcdp"`` or ``in ("pure", ...)`` outside the budget module and
    the accountant (#38). Docstrings and comments that name a notion do not match."""
    compares = _source_lines(
        r"(==|!=)\s*[\"'](pure|zcdp)[\"']|[\"'](pure|zcdp)[\"']\s*(==|!=)"
        r"|\bin\s*[\(\[{]\s*[\"'](pure|zcdp)[\"']",
        outside=("privacy/budget.py", "privacy/accountant.py"),
    )
    assert not compares, compares


#: The modules outside the privacy layer that still read a release's per-clique tables or
#: noise models (``release.noisy[c]``, ``release.noise[c]``) instead of its flat arrays. The
#: list may only shrink: a new reader goes through the flat view (``release.in_order(cliques)``).
PER_CLIQUE_READERS = {
    "bayes/checks.py",
    "fit_report.py",
    "learners/mbi.py",
    "learners/naive_mle.py",
    "prepare/_steps.py",
    "prepare/table.py",
    "select/aim.py",
    "select/estimators.py",
    "select/mst.py",
    "workflow.py",
    "workload_check.py",  # moved from compare_data.py (the private independent model)
}


def test_only_the_listed_modules_read_a_releases_per_clique_internals():
    readers = _source_lines(
        r"\.noisy\[|\.noise\[|\.noisy\.|\.noise\.(items|values|get)\b|\.(noisy|noise)\)",
        outside=tuple(PER_CLIQUE_READERS),
    )
    readers = [r for r in readers if not r.startswith("privacy/")]
    assert not readers, readers


def test_no_module_asks_a_backend_for_a_flat_layout():
    """One flat layout for every backend (#38): backends declare no layout, and no ``.flat``
    switch stands outside the backends' module."""
    from pgm_dp.inference.backend import Backend

    assert "flat" not in getattr(Backend, "__annotations__", {})
    uses = _source_lines(r"\.flat\b", outside=("inference/backend.py",))
    assert not uses, uses


def test_one_measurement_type():
    """Noisy tables with their noise have one type: no dataclass has both a ``noisy`` and a
    ``noise`` field, and :class:`~pgm_dp.privacy.Measurements` declares its flat arrays as
    fields (its per-clique tables are views of them)."""
    from dataclasses import fields

    from pgm_dp.privacy import Measurements

    declared = {f.name for f in fields(Measurements)}
    assert {"y", "scale", "variance", "scales"} <= declared and not {"noisy", "noise"} & declared
    found = []
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            decorators = {ast.unparse(d).split("(")[0] for d in node.decorator_list}
            fields = {
                s.target.id
                for s in node.body
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            }
            if decorators & {"dataclass", "dataclasses.dataclass"} and {"noisy", "noise"} <= fields:
                found.append(f"{_module_name(path)}.{node.name}")
    assert found == []


#: Imports that tie two rooms of the package (a folder, or a module at the top) both ways, so
#: that one of them runs back up: ``domain`` reads the table preparation's column encoder.
#: The set may only shrink.
ROOMS_TIED_BOTH_WAYS: set[tuple[str, str]] = set()


def _room(module: str) -> str:
    """A module's room: its folder under the package, or itself at the top."""
    return module.split(".")[1]


def test_rooms_import_one_way():
    """Seen with each folder as one room, the package's imports have no circle but the
    listed ones: a module that two rooms share moves down, to a room both may import."""
    rooms = nx.DiGraph()
    for a, b in _graph().edges:
        if "pgm_dp" not in (a, b) and _room(a) != _room(b):
            rooms.add_edge(_room(a), _room(b))
    circles = {tuple(c) for c in nx.simple_cycles(rooms)}
    ties = {(a, b) for a, b in ROOMS_TIED_BOTH_WAYS if rooms.has_edge(a, b)}
    rooms.remove_edges_from(ties)
    assert nx.is_directed_acyclic_graph(rooms), (circles, list(nx.simple_cycles(rooms)))
    assert ties == ROOMS_TIED_BOTH_WAYS  # a tie that is gone leaves the list


#: ``# fmt: skip`` lines in the package: code is split by concept, not packed to meet a line
#: limit. The ceiling may only go down.
FMT_SKIP_CEILING = 0


def test_code_is_not_packed_past_the_formatter():
    lines = [
        f"{path.relative_to(ROOT)}:{i}"
        for path in sorted(ROOT.rglob("*.py"))
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"#\s*fmt:\s*(skip|off)", line)
    ]
    assert len(lines) <= FMT_SKIP_CEILING, lines


def test_ci_finds_every_test_folder_itself():
    """``.ci/run`` runs the slow tier one process per folder of ``tests/``, found by a loop
    (a folder listed by hand would leave a new one out, silently)."""
    script = (ROOT.parent / ".ci" / "run").read_text()
    named = set(re.findall(r"\btests/[\w*]+", script))
    assert named == {"tests/*", "tests/test_*"}, named
    assert "for dir in tests/*/; do" in script


def test_mechanisms_and_conversions_are_defined_in_the_privacy_layer_alone():
    """One DP implementation: no module outside ``privacy`` defines a mechanism or a
    conversion between notions (the peers and the selection call the privacy layer's)."""
    pattern = re.compile(r"._mechanism$|^cdp_|_to_approx_dp$|^zcdp_rho")
    found = [
        f"{path.relative_to(ROOT)}:{node.name}"
        for path in ROOT.rglob("*.py")
        if path.relative_to(ROOT).parts[0] != "privacy"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef) and pattern.search(node.name)
    ]
    assert not found, found
