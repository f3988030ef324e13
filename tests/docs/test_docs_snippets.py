"""Every YAML and Python snippet in README.md and docs/**/*.md is validated or run.

The rules (docs/index.md and docs/editor.md repeat them for writers):

- ```` ```yaml ````: a complete scenario. It must load with
  ``mockmcp.scenario.loader.load_text`` (strict structure and semantic checks) and
  validate against the editor schema (``mockmcp schema``).
- ```` ```yaml fragment ````: an excerpt; it must parse as YAML (1.2 core schema,
  no duplicate keys).
- ```` ```python ````: executed in a fresh interpreter (this virtualenv) in an
  empty temporary directory, and must exit 0 within 120 s. A block that defines
  a top-level ``test_*`` function is run with pytest instead (so the ``mockmcp``
  fixture is available), and every test in it must pass.
- ```` ```python fragment ````: an excerpt that needs surrounding code; it must
  compile.
- A block whose first line is ``# file: NAME`` (a tutorial's "save this as
  weather.yaml") is also written as NAME into the directory where every later
  ``python`` block of the same document runs.

Each snippet is one test, named ``FILE:LINE`` (the line of the opening fence),
so a failure points at the doc.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import jsonschema
import pytest
from support.process import LEAN_PYTEST_ADDOPTS

from mockmcp.scenario import loader
from mockmcp.scenario import plainload
from mockmcp.scenario.problems import LoadError
from mockmcp.cli.schema import scenario_schema

ROOT = Path(__file__).resolve().parents[2]
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")


_FILE_MARKER = re.compile(r"^\s*(?:#|//)\s*file:\s*(?P<name>[\w.-]+)\s*$")


class Snippet(NamedTuple):
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    flags: tuple[str, ...]
    text: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def file_name(self) -> str | None:
        """NAME when the block starts with a ``# file: NAME`` marker."""
        m = _FILE_MARKER.match(self.text.split("\n", 1)[0])
        return m["name"] if m else None


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def snippets(path: Path) -> list[Snippet]:
    """Fenced code blocks of a Markdown file (CommonMark fences, possibly indented in lists)."""
    out: list[Snippet] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = len(m["indent"]), m["fence"], m["info"].split()
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            stripped = lines[j].strip()
            if stripped.startswith(fence[0] * len(fence)) and set(stripped) == {fence[0]}:
                break
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        if info:
            out.append(Snippet(path, i + 1, info[0], tuple(info[1:]), "\n".join(body) + "\n"))
        i = j + 1
    return out


ALL = [s for p in doc_files() if p.exists() for s in snippets(p)]
YAML = [s for s in ALL if s.lang == "yaml"]
PYTHON = [s for s in ALL if s.lang == "python"]


def test_the_docs_have_snippets() -> None:
    assert len(YAML) >= 5 and len(PYTHON) >= 1


def test_fence_parser() -> None:
    doc = ROOT / "tests" / "data" / "fences.md"
    found = [(s.line, s.lang, s.flags, s.text) for s in snippets(doc)]
    assert [s.file_name for s in snippets(doc)] == [None, "tools.yaml", None]
    assert found == [
        (3, "yaml", (), "mockmcp: 1\n"),
        (8, "yaml", ("fragment",), "# file: tools.yaml\ntools: []\n"),
        (13, "python", (), "print('````')\n"),
    ]


@pytest.fixture(scope="session")  # per worker; not module-scoped, so xdist spreads the snippets (conftest)
def validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(scenario_schema())


@pytest.mark.parametrize("snippet", YAML, ids=[s.id for s in YAML])
def test_yaml_snippet(snippet: Snippet, validator: jsonschema.Draft202012Validator) -> None:
    unknown = set(snippet.flags) - {"fragment"}
    assert not unknown, f"{snippet.id}: unknown flag(s) {sorted(unknown)} (use ```yaml or ```yaml fragment)"
    try:
        data, _ = plainload.parse_yaml(snippet.text, snippet.id)
        if "fragment" in snippet.flags:
            return
        loader.load_text(snippet.text, snippet.id, base_dir=snippet.path.parent)
    except LoadError as exc:
        pytest.fail(f"{snippet.id}: the ```yaml block does not load (mark excerpts ```yaml fragment):\n{exc}")
    errors = [f"{e.json_path}: {e.message[:200]}" for e in validator.iter_errors(data)]
    assert errors == [], f"{snippet.id}: not valid against `mockmcp schema`"


def _defines_tests(code: str) -> bool:
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test_")
               for n in ast.parse(code).body)


@pytest.mark.parametrize("snippet", PYTHON, ids=[s.id for s in PYTHON])
def test_python_snippet(snippet: Snippet, tmp_path: Path) -> None:
    unknown = set(snippet.flags) - {"fragment"}
    assert not unknown, f"{snippet.id}: unknown flag(s) {sorted(unknown)} (use ```python or ```python fragment)"
    code = compile(snippet.text, snippet.id, "exec")  # a SyntaxError names the doc and line
    assert code is not None
    if "fragment" in snippet.flags:
        return
    for earlier in ALL:
        if earlier.path == snippet.path and earlier.line < snippet.line and earlier.file_name:
            (tmp_path / earlier.file_name).write_text(earlier.text, encoding="utf-8")
    if _defines_tests(snippet.text):
        (tmp_path / "test_snippet.py").write_text(snippet.text, encoding="utf-8")
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_snippet.py"]
    else:
        (tmp_path / "snippet.py").write_text(snippet.text, encoding="utf-8")
        argv = [sys.executable, "snippet.py"]
    env = {**os.environ, "PYTEST_ADDOPTS": LEAN_PYTEST_ADDOPTS}  # (only the pytest runs read it)
    proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (
        f"{snippet.id}: the ```python block failed (exit {proc.returncode}); mark excerpts ```python fragment\n"
        f"--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"
    )
