"""The complete examples of the README and the guides run as written: every ```python block of
the files below is a whole program (the API listings and templates of other pages are not)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: pages whose every python block runs on its own
RUNNABLE = [
    "README.md",
    "docs/index.md",
    "docs/ene.md",
    "docs/private-bandits.md",
    "docs/anytime-and-user-level.md",
    "docs/recommender.md",
]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
#: lines an example prints that its comments quote (fixed seeds)
QUOTED = {
    ("docs/private-bandits.md", 0): ["200 98000.0", "194"],
    ("docs/private-bandits.md", 2): [
        "[0.304 0.336 0.389 0.444] [0.235 0.278 0.343 0.42 ] [0.373 0.394 0.434 0.468]"
    ],
    ("docs/anytime-and-user-level.md", 0): [
        "4 1000 6.7 16.1",
        "4 1 13.7 16.1",
        "16 100 73.5 257.2",
    ],
    ("docs/anytime-and-user-level.md", 1): ["100 5000"],
    ("docs/anytime-and-user-level.md", 2): ["anytime_blt 0.733 0.715", "0.655"],
    ("docs/recommender.md", 0): ["450 227 1579"],
}


def _blocks() -> list[tuple[str, int, str]]:
    found = []
    for page in RUNNABLE:
        text = (ROOT / page).read_text(encoding="utf-8")
        found += [(page, i, m.group(1)) for i, m in enumerate(BLOCK.finditer(text))]
    return found


def test_every_runnable_page_has_an_example():
    assert {page for page, _, _ in _blocks()} == set(RUNNABLE)


@pytest.mark.parametrize(
    ("page", "index", "code"), _blocks(), ids=[f"{p}-{i}" for p, i, _ in _blocks()]
)
def test_the_example_runs_and_prints_what_it_quotes(page, index, code, capsys):
    exec(compile(code, f"{page}[python block {index}]", "exec"), {"__name__": "__doc_example__"})
    out, err = capsys.readouterr()
    assert err == ""
    lines = out.splitlines()
    for quoted in QUOTED.get((page, index), []):
        assert quoted in lines, f"{page} quotes {quoted!r}; the example printed {lines}"


def _modules_with_examples() -> list[str]:
    src = ROOT / "src"
    return sorted(
        ".".join(path.relative_to(src).with_suffix("").parts)
        for path in (src / "dponline").rglob("*.py")
        if ">>> " in path.read_text(encoding="utf-8")
    )


@pytest.mark.parametrize("module", _modules_with_examples())
def test_docstring_examples(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
