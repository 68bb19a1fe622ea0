"""The package's import graph: no cycles, and privacy/ at the bottom (DESIGN.md, "Seams").

Every ``import`` and ``from ... import`` statement in src/dponline, at module level or inside a
function (a deferred import is still a dependency), except those under ``if TYPE_CHECKING:``,
is an edge from the importing module to the module it names and to that module's parent
packages (whose ``__init__`` runs first). The learner catalogue's discovery of learner modules
(:data:`dponline.registry.LEARNER_PACKAGES`, by name through importlib) is a plugin lookup,
not an import statement, and is not an edge."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

import dponline

ROOT = Path(dponline.__file__).parent
#: What privacy/ may import from the package: itself and the RNG helpers.
PRIVACY_MAY_IMPORT = ("dponline.privacy", "dponline.rng")


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, module: str, is_package: bool, known: set[str]) -> set[str]:
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import
                base = module if is_package else module.rsplit(".", 1)[0]
                for _ in range(node.level - 1):
                    base = base.rsplit(".", 1)[0]
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            for a in node.names:
                sub = f"{target}.{a.name}"
                out.add(sub if sub in known else target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    # importing a.b.c runs the package a.b's __init__ first: an edge to every parent package,
    # except the packages this module lies in (they are initialised before it, not by it)
    parents = {
        p
        for m in out
        for k in range(1, m.count(".") + 1)
        if not (module + ".").startswith((p := m.rsplit(".", k)[0]) + ".")
    }
    return {m for m in out | parents if m == "dponline" or m.startswith("dponline.")}


def import_graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in ROOT.rglob("*.py")}
    known = set(files)
    graph = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        edges = _imports(tree, name, path.name == "__init__.py", known)
        graph[name] = {e for e in edges if e in known and e != name}
    return graph


def test_the_graph_is_read_correctly():
    g = import_graph()
    assert "dponline.privacy.budget" in g["dponline.privacy.calibration"]
    assert "dponline.continual.calibration" in g["dponline.continual.factory"]
    assert "dponline.protocol" in g["dponline.online.counter_learner"]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module: every import cycle."""
    names = sorted(graph)
    index = {n: i for i, n in enumerate(names)}
    rows = [index[a] for a in names for b in graph[a]]
    cols = [index[b] for a in names for b in graph[a]]
    adj = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(names), len(names)))
    _, labels = connected_components(adj, directed=True, connection="strong")
    groups: dict[int, list[str]] = {}
    for n, lab in zip(names, labels, strict=True):
        groups.setdefault(int(lab), []).append(n)
    return [sorted(c) for c in groups.values() if len(c) > 1]


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, f"import cycles: {found}"


def test_privacy_imports_nothing_above_it():
    g = import_graph()
    bad = {
        (a, b)
        for a, edges in g.items()
        if a == "dponline.privacy" or a.startswith("dponline.privacy.")
        for b in edges
        if not b.startswith(PRIVACY_MAY_IMPORT)
    }
    assert not bad, f"privacy/ imports from above it: {sorted(bad)}"


def test_a_cycle_would_be_caught():
    # the detector itself: a deferred import back into a module's importer is a cycle
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    source = "def f():\n    from dponline.x import y\n"
    assert _imports(ast.parse(source), "dponline.z", False, {"dponline.x"}) == {"dponline.x"}
    across = "from dponline.a.b import c\n"
    assert _imports(ast.parse(across), "dponline.z.w", False, set()) == {
        "dponline.a.b",
        "dponline.a",
    }
    guarded = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import dponline.x\n"
    assert _imports(ast.parse(guarded), "dponline.z", False, {"dponline.x"}) == set()
