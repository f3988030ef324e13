"""Small modules that each own one thing: no module of the package over 600 lines, no class over 250.

A limit, not a style: past it a module has always turned out to own several things (the HTTP shell
was socket I/O, SSE framing, the plan transport, listen routing, control effects and the process
bootstrap in one class), and the fix is a split along what it owns, not a longer file.
"""

from __future__ import annotations

import ast
from pathlib import Path

from support.paths import ROOT

MAX_MODULE_LINES = 600
MAX_CLASS_LINES = 250


def oversized(source: str, name: str) -> list[str]:
    found = []
    lines = source.count("\n")
    if lines > MAX_MODULE_LINES:
        found.append(f"{name}: {lines} lines")
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
            size = node.end_lineno - node.lineno + 1
            if size > MAX_CLASS_LINES:
                found.append(f"{name}: class {node.name} is {size} lines")
    return found


def test_no_module_or_class_is_over_its_limit() -> None:
    found = []
    for path in sorted((ROOT / "mockmcp").rglob("*.py")):
        found += oversized(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert not found, found


def test_the_check_sees_a_long_module_and_a_long_class() -> None:
    long_class = "class A:\n" + "    x = 1\n" * MAX_CLASS_LINES
    assert oversized(long_class, "a.py") == [f"a.py: class A is {MAX_CLASS_LINES + 1} lines"]
    long_module = "x = 1\n" * (MAX_MODULE_LINES + 1)
    assert oversized(long_module, "b.py") == [f"b.py: {MAX_MODULE_LINES + 1} lines"]
    assert oversized("class B:\n    pass\n", "c.py") == []


MAX_PERFORMANCE_PAGE_LINES = 250


def test_the_performance_page_stays_a_user_page() -> None:
    """docs/performance.md says how to run the benchmarks, the current figures and the decisions
    that stand; the measurements pass by pass are in git. A page that grows past this has become
    a lab notebook again."""
    lines = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_PERFORMANCE_PAGE_LINES, f"docs/performance.md has {lines} lines"
