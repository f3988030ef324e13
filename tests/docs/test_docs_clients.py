"""docs/clients.md, the client cheat sheet: every entry runs against the real mock.

The page's ```python blocks are pytest tests that tests/docs/test_docs_snippets.py runs as
written (each asserts what its callbacks received); this module holds the page to that shape, so
no entry can become an untested excerpt, and runs the page's ```js blocks, in order, as one ES
module with Node and the suite's TypeScript client: each entry asserts inline and prints one line.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "clients.md"
TS_MODULES = ROOT / "tests" / "interop" / "ts" / "node_modules"
ENTRIES = ["Connecting", "Elicitation, sampling and roots", "Progress and logging", "Cancellation", "Tasks"]


def _sections() -> dict[str, str]:
    """The page's level-2 sections by title."""
    parts = re.split(r"^## (.+)$", PAGE.read_text(encoding="utf-8"), flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def _blocks(text: str, info: str) -> list[str]:
    return re.findall(rf"^```{info}\n(.*?)^```$", text, flags=re.S | re.M)


def test_every_entry_has_a_python_test_and_a_typescript_part() -> None:
    sections = _sections()
    for entry in ENTRIES:
        title = next((t for t in sections if t.startswith(entry)), None)
        assert title is not None, f"docs/clients.md has no section {entry!r}"
        python, js = _blocks(sections[title], "python"), _blocks(sections[title], "js")
        assert len(python) == 1 and len(js) == 1, f"{title}: one ```python and one ```js block"
        # a pytest test, so test_docs_snippets runs it rather than only compiling it
        assert re.search(r"^def test_\w+\(mockmcp\):", python[0], flags=re.M), title
    text = PAGE.read_text(encoding="utf-8")
    assert "```python fragment" not in text and "```js fragment" not in text


def test_the_page_is_linked() -> None:
    for page in (ROOT / "docs" / "index.md", ROOT / "README.md"):
        assert "clients.md" in page.read_text(encoding="utf-8"), f"{page.name} does not link docs/clients.md"


@pytest.mark.usefixtures("typescript_client")
def test_the_typescript_entries_run(tmp_path: Path) -> None:
    program = "\n".join(_blocks(PAGE.read_text(encoding="utf-8"), "js"))
    (tmp_path / "node_modules").symlink_to(TS_MODULES)  # the suite's install of the client
    (tmp_path / "cheatsheet.mjs").write_text(program, encoding="utf-8")
    env = {**os.environ, "MOCKMCP_PYTHON": sys.executable, "TMPDIR": str(tmp_path)}  # its journal goes there
    proc = subprocess.run(["node", "cheatsheet.mjs"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == [
        "connect: 2026-07-28 over stdio and HTTP",
        "input rounds: form: Really deploy? confirm | Say hello (100) | roots",
        "progress: 1 2 step 1 of 2; logs: 3",
        "cancellation: 2 notifications/cancelled",
        "tasks: UNSUPPORTED_RESULT_TYPE",
    ]
