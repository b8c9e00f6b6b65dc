"""privtune's modules import each other without a circle (issue 39: "the import graph has no circle").

The graph is built from the source with :mod:`ast`, not by importing: a node per module (a package is its
``__init__``), an edge for every ``import`` / ``from ... import`` anywhere in the file, at module level, inside a
function or method, or under ``if TYPE_CHECKING:``. A lazy import inside a function still makes the two modules
depend on each other, so it counts. ``from package import name`` points at the submodule when ``name`` is one,
else at the package. Importing a submodule also runs its parents' ``__init__``; those implicit edges are left out
(every subpackage would otherwise sit on a circle with its parent).
"""

from __future__ import annotations

import ast
import pathlib

import pytest

import privtune

ROOT = pathlib.Path(privtune.__file__).parent


def _modules(root: pathlib.Path) -> dict[str, tuple[pathlib.Path, bool]]:
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def import_graph(root: pathlib.Path = ROOT) -> dict[str, set[str]]:
    """Module -> the modules of ``root``'s package it imports (anywhere in its source)."""
    modules = _modules(root)
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, (path, is_package) in modules.items():
        package = name if is_package else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                edges[name].update(alias.name for alias in node.names if alias.name in modules)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                for alias in node.names:
                    if f"{source}.{alias.name}" in modules:
                        edges[name].add(f"{source}.{alias.name}")
                    elif source in modules:
                        edges[name].add(source)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One circle per strongly connected component with a circle (Tarjan), each as a path back to its start."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1 or v in edges[v]:
                components.append(component)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return [_shortest_circle(edges, component, min(component)) for component in components]


def _shortest_circle(edges: dict[str, set[str]], component: set[str], start: str) -> list[str]:
    """A shortest path from ``start`` back to itself inside ``component`` (breadth-first)."""
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(edges[v] & component):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    following.append(w)
        frontier = following
    raise AssertionError(f"{start} is on no circle of its component")  # unreachable for a Tarjan component


def test_privtune_has_no_import_cycle():
    found = cycles(import_graph())
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(c) for c in found)


def _write(root: pathlib.Path, files: dict[str, str]) -> pathlib.Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


@pytest.mark.parametrize("files, expected", [
    # a lazy import inside a method closes the circle
    ({"pkg/__init__.py": "", "pkg/a.py": "from pkg.b import f\n",
      "pkg/b.py": "def f():\n    from pkg import a\n"}, [["pkg.a", "pkg.b", "pkg.a"]]),
    # TYPE_CHECKING and relative imports count
    ({"pkg/__init__.py": "", "pkg/sub/__init__.py": "", "pkg/sub/x.py": "from ..y import Y\n",
      "pkg/y.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.sub import x\n"},
     [["pkg.sub.x", "pkg.y", "pkg.sub.x"]]),
    # a package's modules importing each other one way, and the package re-exporting them: no circle
    ({"pkg/__init__.py": "from pkg.a import f\n", "pkg/a.py": "from pkg.b import g\n", "pkg/b.py": "g = 1\n"}, []),
])
def test_the_cycle_finder_reports_a_circle_and_only_a_circle(tmp_path, files, expected):
    assert cycles(import_graph(_write(tmp_path, files))) == expected
