"""The package's import graph: no cycles, and privacy/ at the bottom (docs/design.md, "Layers").

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
#: What privacy/ may import from the package: itself, the RNG helpers and the warning helper.
PRIVACY_MAY_IMPORT = ("dponline.privacy", "dponline.rng", "dponline.warn")


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


# --- layering: losses below the learners, environments below both ---------------------------

#: The learner packages: each takes its losses from dponline.losses, not from another one.
LEARNER_PACKAGES = ("dponline.online", "dponline.stochastic", "dponline.bandits")
#: What no environment may reach, directly or through other modules: the learners, their
#: catalogue and everything built on them.
ABOVE_ENVIRONMENTS = (
    *LEARNER_PACKAGES,
    "dponline.registry",
    "dponline.experiments",
    "dponline.checks",
    "dponline.cli",
)
#: Layer 2 (docs/design.md, "Layers"): the protocol, the catalogue and the doubling trick
#: (dponline.doubling, which learners of every package wrap); none reaches a learner package,
#: the environments or anything above them.
LAYER_2 = ("dponline.protocol", "dponline.registry", "dponline.doubling")
ABOVE_LAYER_2 = (
    *LEARNER_PACKAGES,
    "dponline.environments",
    "dponline.experiments",
    "dponline.checks",
    "dponline.cli",
)
#: What the losses may reach inside the package: themselves, privacy/ (``check_finite``) and
#: what privacy/ may import.
LOSSES_MAY_REACH = ("dponline.losses", *PRIVACY_MAY_IMPORT)
#: The imports that remain across learner packages, each with its reason. Han et al.'s
#: Algorithm 3 (the GLM bandit) runs their Algorithm 2 (the streaming Frank-Wolfe estimator,
#: itself a registered stochastic learner) on every arm: composition, not shared losses.
CROSS_LEARNER_IMPORTS = {
    ("dponline.bandits.glm_bandit", "dponline.stochastic.noisy_min_frank_wolfe"),
    ("dponline.bandits.glm_bandit", "dponline.stochastic"),  # that module's package __init__
}


def _within(module: str, packages: tuple[str, ...] | str) -> bool:
    packages = (packages,) if isinstance(packages, str) else packages
    return any(module == p or module.startswith(p + ".") for p in packages)


def _learner_package(module: str) -> str | None:
    return next((p for p in LEARNER_PACKAGES if _within(module, p)), None)


def reachable(graph: dict[str, set[str]], starts: list[str]) -> dict[str, list[str]]:
    """Every module reachable from ``starts``, with one import chain that reaches it."""
    chains = {s: [s] for s in starts}
    stack = list(starts)
    while stack:
        m = stack.pop()
        for n in sorted(graph.get(m, ())):
            if n not in chains:
                chains[n] = [*chains[m], n]
                stack.append(n)
    return chains


def layering_violations(graph: dict[str, set[str]]) -> list[str]:
    """Every breach of the layering, as one line each (empty when the graph keeps it)."""
    out = []
    envs = [m for m in graph if _within(m, "dponline.environments")]
    for m, chain in sorted(reachable(graph, envs).items()):
        if _within(m, ABOVE_ENVIRONMENTS):
            out.append(f"an environment reaches {m}: {' -> '.join(chain)}")
    layer_2 = [m for m in graph if _within(m, LAYER_2)]
    for m, chain in sorted(reachable(graph, layer_2).items()):
        if _within(m, ABOVE_LAYER_2):
            out.append(f"layer 2 reaches {m}: {' -> '.join(chain)}")
    losses = [m for m in graph if _within(m, "dponline.losses")]
    for m, chain in sorted(reachable(graph, losses).items()):
        if not _within(m, LOSSES_MAY_REACH):
            out.append(f"the losses reach {m}: {' -> '.join(chain)}")
    for a, edges in sorted(graph.items()):
        pa = _learner_package(a)
        for b in sorted(edges):
            pb = _learner_package(b)
            if pa and pb and pa != pb and (a, b) not in CROSS_LEARNER_IMPORTS:
                out.append(f"learner package {pa} imports another: {a} -> {b}")
    return out


def test_environments_and_losses_sit_below_the_learners():
    violations = layering_violations(import_graph())
    assert not violations, "\n".join(violations)


def test_the_remaining_cross_learner_imports_are_exactly_the_listed_ones():
    # a listed import that is gone must leave the list, so the list says what remains
    g = import_graph()
    found = {
        (a, b)
        for a, edges in g.items()
        for b in edges
        if _learner_package(a)
        and _learner_package(b)
        and _learner_package(a) != _learner_package(b)
    }
    assert found == CROSS_LEARNER_IMPORTS


def test_every_learner_package_takes_its_losses_from_dponline_losses():
    g = import_graph()
    for package in LEARNER_PACKAGES:
        users = [
            a for a in g if _within(a, package) and any(_within(b, "dponline.losses") for b in g[a])
        ]
        assert users, f"{package} imports nothing from dponline.losses"


def test_losses_and_the_logistic_function_are_defined_only_in_dponline_losses():
    """No module outside dponline.losses defines a name the losses package exports (a second
    copy of a loss or link) or calls scipy's logistic function (a second logistic link)."""
    import dponline.losses

    exported = set(dponline.losses.__all__)
    bad: list[str] = []
    for path in ROOT.rglob("*.py"):
        module = _module_name(path)
        if _within(module, "dponline.losses"):
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in tree.body:
            names = (
                [node.name]
                if isinstance(node, ast.ClassDef | ast.FunctionDef)
                else [t.id for t in node.targets if isinstance(t, ast.Name)]
                if isinstance(node, ast.Assign)
                else []
            )
            bad += [f"{module} defines {n}" for n in names if n in exported]
        for node in ast.walk(tree):
            if isinstance(node, ast.Name | ast.Attribute | ast.alias):
                word = getattr(node, "id", None) or getattr(node, "attr", None) or node.name
                if word in ("expit", "log_expit", "scipy.special.expit"):
                    bad.append(f"{module} uses {word}")
    assert not bad, sorted(set(bad))


def test_the_layering_check_catches_a_learner_import_in_an_environment():
    g = {
        "dponline.environments.x": {"dponline.losses"},
        "dponline.losses": {"dponline.privacy"},
        "dponline.privacy": set(),
        "dponline.online.ctrl": {"dponline.losses"},
        "dponline.online": {"dponline.online.ctrl"},
        "dponline.registry": set(),
        "dponline.bandits.b": {"dponline.losses"},
        "dponline.stochastic.s": set(),
    }
    assert layering_violations(g) == []
    bad = {**g, "dponline.environments.x": {"dponline.losses", "dponline.online.ctrl"}}
    assert layering_violations(bad) == [
        "an environment reaches dponline.online.ctrl: "
        "dponline.environments.x -> dponline.online.ctrl"
    ]
    # through a helper module too, and the registry counts as above the environments
    via = {
        **g,
        "dponline.environments.x": {"dponline.domains.y"},
        "dponline.domains.y": {"dponline.registry"},
    }
    assert layering_violations(via) == [
        "an environment reaches dponline.registry: "
        "dponline.environments.x -> dponline.domains.y -> dponline.registry"
    ]
    up = {**g, "dponline.losses": {"dponline.privacy", "dponline.stochastic.s"}}
    assert layering_violations(up) == [  # the environments above the losses reach it too
        "an environment reaches dponline.stochastic.s: "
        "dponline.environments.x -> dponline.losses -> dponline.stochastic.s",
        "the losses reach dponline.stochastic.s: dponline.losses -> dponline.stochastic.s",
    ]
    # the doubling trick sits below the learners that wrap themselves in it
    doubling = {
        **g,
        "dponline.doubling": {"dponline.privacy"},
        "dponline.bandits.b": {"dponline.doubling"},
    }
    assert layering_violations(doubling) == []
    assert layering_violations({**doubling, "dponline.doubling": {"dponline.bandits.b"}}) == [
        "layer 2 reaches dponline.bandits.b: dponline.doubling -> dponline.bandits.b"
    ]
    across = {**g, "dponline.bandits.b": {"dponline.online.ctrl"}}
    assert layering_violations(across) == [
        "learner package dponline.bandits imports another: "
        "dponline.bandits.b -> dponline.online.ctrl"
    ]
