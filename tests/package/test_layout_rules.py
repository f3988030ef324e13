"""Rules of the package's layout that its source must keep, read with ``ast``.

- No module imports another module's underscore name (``from .server import _hard_exit``):
  what another module uses is public where it is owned. Dunder names (``__version__``) are public.
- No class defines ``__getattr__``: a class that forwards unknown attributes to another object
  hides its surface from IDEs and ``mypy``; it declares what it offers instead. (A module-level
  ``__getattr__``, PEP 562, is another matter and not checked here.)
- No test module imports another test module (``from test_tasks import Core``): that works only
  when the other module's folder happens to be on ``sys.path`` (same folder, or collected first),
  so a file run alone fails. What tests share lives in ``tests/support/``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "mockmcp"
MODULES = sorted(PACKAGE.rglob("*.py"))
TESTS = Path(__file__).resolve().parents[1]
TEST_SOURCES = sorted(p for p in TESTS.rglob("*.py") if "node_modules" not in p.relative_to(TESTS).parts)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute module an ``ImportFrom`` names (``from . import x`` in ``mockmcp.a``: ``mockmcp``)."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def private_imports(source: str, path: Path) -> list[str]:
    """Each import of an underscore name from another mockmcp module, as ``line: what``."""
    module = _module_name(path)
    found = []
    for node in ast.walk(ast.parse(source, str(path))):  # (imports inside functions too)
        if isinstance(node, ast.ImportFrom):
            origin = _resolve(module, path, node)
            if origin != "mockmcp" and not origin.startswith("mockmcp."):
                continue
            if origin == module:
                continue
            names = [a.name for a in node.names]
            if _private(origin.rsplit(".", 1)[-1]):  # a private module: all of it
                found.append(f"{node.lineno}: from {origin} import {', '.join(names)}")
            else:
                found += [f"{node.lineno}: from {origin} import {name}" for name in names if _private(name)]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("mockmcp") and any(_private(p) for p in alias.name.split(".")):
                    found.append(f"{node.lineno}: import {alias.name}")
    return found


def forwarding_classes(source: str, path: Path) -> list[str]:
    """Each class (at any depth) that defines ``__getattr__``, as ``line: Class``."""
    found = []
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "__getattr__":
                    found.append(f"{item.lineno}: {node.name}")
                elif isinstance(item, (ast.Assign, ast.AnnAssign)):
                    targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                    if any(isinstance(t, ast.Name) and t.id == "__getattr__" for t in targets):
                        found.append(f"{item.lineno}: {node.name}")
    return found


def _a_test_module(dotted: str) -> bool:
    return any(part.startswith("test_") for part in dotted.split("."))


def imports_of_test_modules(source: str, path: Path) -> list[str]:
    """Each import of a test module (``test_*``, at any depth of a dotted name), as ``line: what``."""
    found = []
    for node in ast.walk(ast.parse(source, str(path))):  # (imports inside functions too)
        if isinstance(node, ast.ImportFrom):
            origin = "." * node.level + (node.module or "")
            names = [a.name for a in node.names]
            if _a_test_module(origin):
                found.append(f"{node.lineno}: from {origin} import {', '.join(names)}")
            else:
                found += [f"{node.lineno}: from {origin} import {name}" for name in names if _a_test_module(name)]
        elif isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if _a_test_module(a.name)]
    return found


def test_the_package_is_found() -> None:
    assert len(MODULES) > 50 and PACKAGE / "api.py" in MODULES


def test_no_test_module_imports_another_test_module() -> None:
    """Each test file passes when run alone: what tests share is imported from ``tests/support/``."""
    assert len(TEST_SOURCES) > 100 and TESTS / "conftest.py" in TEST_SOURCES
    found = [f"{path.relative_to(TESTS)}:{hit}" for path in TEST_SOURCES
             for hit in imports_of_test_modules(path.read_text(encoding="utf-8"), path)]
    assert found == []


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_underscore_name_is_imported_from_another_module(path: Path) -> None:
    assert private_imports(path.read_text(encoding="utf-8"), path) == []


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_class_forwards_attributes_through_getattr(path: Path) -> None:
    assert forwarding_classes(path.read_text(encoding="utf-8"), path) == []


def test_the_checks_see_what_they_forbid() -> None:
    """The rules find each form they are about (and leave alone what they allow)."""
    here = PACKAGE / "record" / "proxy.py"
    source = (
        "from mockmcp.shells.stdio import Shell, _hard_exit\n"
        "from . import _private_module\n"
        "from mockmcp.api import _thing\n"
        "import mockmcp._hidden\n"
        "from mockmcp import __version__\n"
        "from ._x import y\n"
        "from os import _exit\n"
        "def f():\n"
        "    from ..launch.run import _observers\n"
        "    from mockmcp.record.proxy import _key\n"  # its own name: allowed
    )
    assert private_imports(source, here) == [
        "1: from mockmcp.shells.stdio import _hard_exit",
        "2: from mockmcp.record import _private_module",
        "3: from mockmcp.api import _thing",
        "4: import mockmcp._hidden",
        "6: from mockmcp.record._x import y",
        "9: from mockmcp.launch.run import _observers",
    ]
    classes = (
        "class A:\n"
        "    def __getattr__(self, name): ...\n"
        "class B:\n"
        "    class C:\n"
        "        __getattr__ = lambda self, n: None\n"
        "def __getattr__(name): ...\n"  # a module's (PEP 562): not this rule's
    )
    assert forwarding_classes(classes, here) == ["2: A", "5: C"]

    imports = (
        "from test_tasks import EXT, Core\n"
        "from core.test_legacy_era import Legacy\n"
        "import test_control_shell\n"
        "import core.test_tasks as t\n"
        "from core import test_tasks, helpers\n"
        "from .test_x import y\n"
        "from support.taskcore import Core\n"  # a helper module: allowed
        "import pytest, contextlib\n"
        "from unittest import mock\n"
        "def f():\n"
        "    from test_tasks_push import send\n"
    )
    assert imports_of_test_modules(imports, TESTS / "record" / "test_x.py") == [
        "1: from test_tasks import EXT, Core",
        "2: from core.test_legacy_era import Legacy",
        "3: import test_control_shell",
        "4: import core.test_tasks",
        "5: from core import test_tasks",
        "6: from .test_x import y",
        "11: from test_tasks_push import send",
    ]
