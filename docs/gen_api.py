"""Generate the API reference, the command-line help and the reproductions' pages.

Run by the ``mkdocs-gen-files`` plugin while ``mkdocs build`` runs (see ``mkdocs.yml``); it
writes virtual pages only, nothing in the working tree.

* **API reference** (``reference/``): the ``pgm_dp`` package is walked on disk, so modules that
  move or appear are picked up without editing this file. One page per public module (no
  path component starting with ``_``; the command line's internal modules and
  :data:`EXCLUDED` are skipped). A page shows the module's docstring and renders, with
  mkdocstrings, every name of its ``__all__`` that the module defines itself; names it
  re-exports are listed with a link to the page of the module that defines them. A module
  without ``__all__`` shows its docstring only.
* **Command-line help** (``reference/cli.md``): ``pgm-dp COMMAND --help`` of every command,
  read from the parser itself.
* **Reproductions** (``reproductions/``): ``reproductions/README.md`` and each paper's
  ``RESULTS.md`` with the figures and tables beside it, copied from the repository.

The modules are read with :mod:`ast`, never imported (the command line's parser is the
exception: it imports no heavy dependency).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "pgm_dp"
#: Module prefixes left out of the reference: the paper experiments (run from
#: ``reproductions/``) and the command line's internals (its help is generated instead).
EXCLUDED = ("pgm_dp.experiments", "pgm_dp.cli.")
#: Files copied from each ``reproductions/<paper>/`` folder (the code itself is not).
RESULT_SUFFIXES = (".png", ".svg", ".csv")


@dataclass
class Module:
    """What the reference needs to know about one module, read from its source."""

    name: str
    path: Path
    is_package: bool
    exported: list[str] | None = None  # __all__, or None
    defined: set[str] = field(default_factory=set)  # top-level definitions
    imported: dict[str, tuple[str, str]] = field(default_factory=dict)  # alias: (module, name)

    @property
    def page(self) -> str:
        path = "reference/" + "/".join(self.name.split("."))
        return path + ("/index.md" if self.is_package else ".md")


def _module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def _is_public(name: str) -> bool:
    if any(part.startswith("_") for part in name.split(".")):
        return False
    return not any(name == p.rstrip(".") or name.startswith(p) for p in EXCLUDED)


def _absolute(module: Module, level: int, target: str | None) -> str:
    """The absolute module name of a (possibly relative) ``from ... import``."""
    if level == 0:
        return target or ""
    base = module.name.split(".")
    if not module.is_package:
        base = base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _string_list(node: ast.expr) -> list[str] | None:
    if isinstance(node, ast.List | ast.Tuple):
        items = [e.value for e in node.elts if isinstance(e, ast.Constant)]
        if all(isinstance(i, str) for i in items) and len(items) == len(node.elts):
            return items
    return None


def read_module(path: Path) -> Module:
    """Parse one module: its ``__all__``, its definitions and its imports."""
    name, is_package = _module_name(path)
    mod = Module(name, path, is_package)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            mod.defined.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    if t.id == "__all__" and node.value is not None:
                        mod.exported = _string_list(node.value)
                    else:
                        mod.defined.add(t.id)
        elif isinstance(node, ast.AugAssign) and getattr(node.target, "id", "") == "__all__":
            extra = _string_list(node.value)
            if mod.exported is not None and extra:
                mod.exported += extra
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(mod, node.level, node.module)
            for alias in node.names:
                mod.imported[alias.asname or alias.name] = (source, alias.name)
    return mod


def discover() -> dict[str, Module]:
    """Every public module of the package, by name."""
    found = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        name, _ = _module_name(path)
        if path.name == "__main__.py" or not _is_public(name):
            continue
        found[name] = read_module(path)
    return found


def defining_module(mods: dict[str, Module], module: str, name: str, depth=0) -> str | None:
    """The documented module that defines and exports ``name`` re-exported by ``module``."""
    mod = mods.get(module)
    if mod is None or depth > 10:
        return None
    if name in mod.defined and mod.exported is not None and name in mod.exported:
        return module
    if name in mod.imported:
        source, original = mod.imported[name]
        found = defining_module(mods, source, original, depth + 1)
        if found is None and f"{source}.{original}" in mods:  # a submodule imported by name
            return f"{source}.{original}"
        return found
    return None


def _anywhere(mods: dict[str, Module], name: str) -> str | None:
    """A module that defines and exports ``name`` (for names imported lazily)."""
    hits = [m.name for m in mods.values() if name in m.defined and name in (m.exported or ())]
    return hits[0] if len(hits) == 1 else None


def _link(mods: dict[str, Module], target: str, here: Module) -> str:
    """A relative link from ``here``'s page to the page of module ``target``."""
    rel = os.path.relpath(mods[target].page, os.path.dirname(here.page))
    return Path(rel).as_posix()


def render(mods: dict[str, Module], mod: Module) -> str:
    """The markdown of one module's page."""
    exported = mod.exported or []
    local = [n for n in exported if n in mod.defined]
    members = f"[{', '.join(repr(n) for n in local)}]" if local else "false"
    lines = [
        f"# `{mod.name}`",
        "",
        f"::: {mod.name}",
        "    options:",
        "      show_root_heading: false",
        "      show_submodules: false",
        f"      members: {members}",
    ]
    rows = []
    for n in exported:
        if n in mod.defined:
            continue
        owner = defining_module(mods, mod.name, n) if n in mod.imported else None
        if owner is None and f"{mod.name}.{n}" in mods:
            owner = f"{mod.name}.{n}"
        owner = owner or _anywhere(mods, n)
        defines = owner is not None and owner in mods and n in mods[owner].defined
        if owner is not None and owner.endswith(f".{n}") and owner in mods and not defines:
            rows.append(f"| [`{n}`]({_link(mods, owner, mod)}) | module |")
        elif owner is not None and owner != mod.name:
            rows.append(f"| [`{n}`][{owner}.{n}] | [`{owner}`]({_link(mods, owner, mod)}) |")
        else:
            rows.append(f"| `{n}` | `{mod.imported.get(n, ('?',))[0]}` |")
    if rows:
        lines += ["", "## Re-exported here", "", "| name | defined in |", "|---|---|", *rows]
    return "\n".join(lines) + "\n"


def write_reference(mods: dict[str, Module]) -> None:
    nav = mkdocs_gen_files.Nav()
    for name in sorted(mods):
        mod = mods[name]
        parts = tuple(name.split("."))
        nav[parts] = os.path.relpath(mod.page, "reference")
        with mkdocs_gen_files.open(mod.page, "w") as fh:
            fh.write(render(mods, mod))
        mkdocs_gen_files.set_edit_path(mod.page, mod.path.relative_to(ROOT))
    with mkdocs_gen_files.open("reference/SUMMARY.md", "w") as fh:
        fh.write("* [Command-line help](cli.md)\n")
        fh.writelines(nav.build_literate_nav())


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _help_sections(prefix: str, parser: argparse.ArgumentParser, level: int) -> list[str]:
    out = [f"{'#' * level} `{prefix}`", "", "```text", parser.format_help().rstrip(), "```", ""]
    for name, sub in _subparsers(parser).items():
        out += _help_sections(f"{prefix} {name}", sub, min(level + 1, 4))
    return out


def write_cli_help() -> None:
    """``reference/cli.md``: the ``--help`` of ``pgm-dp`` and of every command."""
    os.environ["COLUMNS"] = "96"  # argparse wraps to this width
    sys.path.insert(0, str(ROOT))
    from pgm_dp.cli import build_parser

    with contextlib.redirect_stderr(io.StringIO()):
        parser = build_parser()
    lines = [
        "# Command-line help",
        "",
        "Generated from the parser: the output of `pgm-dp --help` and of",
        "`pgm-dp COMMAND --help` for every command. A guided tour is in",
        "[the command-line page](../cli.md).",
        "",
        "```text",
        parser.format_help().rstrip(),
        "```",
        "",
    ]
    for name, sub in _subparsers(parser).items():
        lines += _help_sections(f"pgm-dp {name}", sub, 2)
    with mkdocs_gen_files.open("reference/cli.md", "w") as fh:
        fh.write("\n".join(lines))
    mkdocs_gen_files.set_edit_path("reference/cli.md", "pgm_dp/cli/__init__.py")


def write_reproductions() -> None:
    """Copy ``reproductions/README.md`` and each ``<paper>/RESULTS.md`` with its figures."""
    base = ROOT / "reproductions"
    readme = base / "README.md"
    if not readme.exists():
        return
    nav = ["* [Overview](index.md)\n"]
    with mkdocs_gen_files.open("reproductions/index.md", "w") as fh:
        fh.write(readme.read_text(encoding="utf-8"))
    mkdocs_gen_files.set_edit_path("reproductions/index.md", readme.relative_to(ROOT))
    for results in sorted(base.glob("*/RESULTS.md")):
        paper = results.parent.name
        page = f"reproductions/{paper}/RESULTS.md"
        text = results.read_text(encoding="utf-8").replace("](../README.md", "](../index.md")
        with mkdocs_gen_files.open(page, "w") as fh:
            fh.write(text)
        mkdocs_gen_files.set_edit_path(page, results.relative_to(ROOT))
        title = text.splitlines()[0].lstrip("# ").strip()
        nav.append(f"* [{title or paper}]({paper}/RESULTS.md)\n")
        for extra in sorted(results.parent.rglob("*")):
            if extra.is_file() and extra.suffix in RESULT_SUFFIXES:
                target = f"reproductions/{paper}/{extra.relative_to(results.parent).as_posix()}"
                with mkdocs_gen_files.open(target, "wb") as fh:
                    fh.write(extra.read_bytes())
    with mkdocs_gen_files.open("reproductions/SUMMARY.md", "w") as fh:
        fh.writelines(nav)


write_reference(discover())
write_cli_help()
write_reproductions()
