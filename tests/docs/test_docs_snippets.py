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
  fixture is available), and every test in it must pass. Those blocks run in one
  pytest run (a pytest start and the ``mcp`` import are two of the three CPU
  seconds each block cost on its own), each from its own empty directory, which is
  the working directory while its tests run; each block's outcome is its own test.
- ```` ```python fragment ````: an excerpt that needs surrounding code; it must
  compile.
- A block whose first line is ``# file: NAME`` (a tutorial's "save this as
  weather.yaml") is also written as NAME into the directory where every later
  ``python`` block of the same document runs.
- ```` ```sh ```` and ```` ```sh template ````: tests/docs/test_docs_shell.py (a ```` ```sh ````
  block runs in bash and must exit 0; a template's ``mockmcp`` commands must parse, and
  its ``mockmcp run`` commands are started and stopped).

Each snippet is one test, named ``FILE:LINE`` (the line of the opening fence),
so a failure points at the doc.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import jsonschema
import pytest
from support.markdown import Fenced, doc_pages, fenced_blocks
from support.process import LEAN_PYTEST_ADDOPTS

from mockmcp.scenario import loader
from mockmcp.scenario import plainload
from mockmcp.scenario.problems import LoadError
from mockmcp.cli.schema import scenario_schema

ROOT = Path(__file__).resolve().parents[2]
Snippet = Fenced


def doc_files() -> list[Path]:
    return doc_pages()


def snippets(path: Path) -> list[Snippet]:
    """Fenced code blocks of a Markdown file (``support.markdown``: one reading for every docs test)."""
    return fenced_blocks(path)


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


@pytest.fixture(scope="session")
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


def _write_directory(snippet: Snippet, directory: Path) -> None:
    """Fill ``directory`` with the ``# file: NAME`` blocks above ``snippet`` in its document."""
    directory.mkdir(parents=True, exist_ok=True)
    for earlier in ALL:
        if earlier.path == snippet.path and earlier.line < snippet.line and earlier.file_name:
            (directory / earlier.file_name).write_text(earlier.text, encoding="utf-8")


def _slug(snippet: Snippet) -> str:
    return re.sub(r"\W", "_", snippet.id)


# The conftest of the one pytest run of every test block: while a block's tests run, the working
# directory is the block's own (its ``# file:`` blocks are there, as when it ran alone), and each
# report is kept by test file, so every block gets its own verdict.
_BATCH_CONFTEST = """\
import json
import os

import pytest

REPORTS = {}


@pytest.fixture(autouse=True)
def _in_the_block_directory(request, monkeypatch):
    monkeypatch.chdir(request.path.parent)


def _keep(report):
    name = os.path.basename(report.nodeid.split("::", 1)[0])
    REPORTS.setdefault(name, []).append([report.nodeid, report.when, report.outcome, report.longreprtext])


def pytest_runtest_logreport(report):
    _keep(report)


def pytest_collectreport(report):
    if report.failed:
        _keep(report)


def pytest_sessionfinish(session):
    with open(os.path.join(str(session.config.rootpath), "reports.json"), "w", encoding="utf-8") as out:
        json.dump(REPORTS, out)
"""


class BatchRun(NamedTuple):
    reports: dict[str, list[list[str]]]  # test file name -> [nodeid, phase, outcome, text] per report
    output: str


@pytest.fixture(scope="module")  # one pytest run for every test block (groups this module on one worker)
def test_blocks(tmp_path_factory: pytest.TempPathFactory) -> BatchRun:
    base = tmp_path_factory.mktemp("snippets")
    (base / "conftest.py").write_text(_BATCH_CONFTEST, encoding="utf-8")
    files = []
    for snippet in PYTHON:
        if "fragment" in snippet.flags or not _defines_tests(snippet.text):
            continue
        directory = base / _slug(snippet)
        _write_directory(snippet, directory)
        (directory / f"test_{_slug(snippet)}.py").write_text(snippet.text, encoding="utf-8")
        files.append(f"{directory.name}/test_{_slug(snippet)}.py")
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--continue-on-collection-errors",
            "--rootdir", str(base), "--basetemp", str(base / "tmp"), *files]  # a block that does not import fails alone
    env = {**os.environ, "PYTEST_ADDOPTS": LEAN_PYTEST_ADDOPTS}
    proc = subprocess.run(argv, cwd=base, env=env, capture_output=True, text=True, timeout=120 * len(files))
    output = f"--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"
    path = base / "reports.json"
    reports = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    return BatchRun(reports, output)


@pytest.mark.parametrize("snippet", PYTHON, ids=[s.id for s in PYTHON])
def test_python_snippet(snippet: Snippet, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    unknown = set(snippet.flags) - {"fragment"}
    assert not unknown, f"{snippet.id}: unknown flag(s) {sorted(unknown)} (use ```python or ```python fragment)"
    code = compile(snippet.text, snippet.id, "exec")  # a SyntaxError names the doc and line
    assert code is not None
    if "fragment" in snippet.flags:
        return
    if _defines_tests(snippet.text):
        _check_test_block(snippet, request.getfixturevalue("test_blocks"))
        return
    _write_directory(snippet, tmp_path)
    (tmp_path / "snippet.py").write_text(snippet.text, encoding="utf-8")
    proc = subprocess.run([sys.executable, "snippet.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (
        f"{snippet.id}: the ```python block failed (exit {proc.returncode}); mark excerpts ```python fragment\n"
        f"--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"
    )


def _check_test_block(snippet: Snippet, run: BatchRun) -> None:
    """The block's tests all ran in the shared pytest run, at least one, and none failed."""
    reports = run.reports.get(f"test_{_slug(snippet)}.py", [])
    failed = [f"{nodeid} ({phase}):\n{text[-3000:]}" for nodeid, phase, outcome, text in reports if outcome == "failed"]
    assert not failed, (
        f"{snippet.id}: the ```python block failed; mark excerpts ```python fragment\n" + "\n".join(failed)
    )
    passed = [nodeid for nodeid, phase, outcome, _ in reports if phase == "call" and outcome == "passed"]
    assert passed, f"{snippet.id}: the ```python block defines tests but none passed in the pytest run\n{run.output}"
