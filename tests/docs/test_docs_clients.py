"""docs/clients.md, the client cheat sheet: every entry runs against the real mock.

The page's ```python blocks are pytest tests that tests/docs/test_docs_snippets.py runs as
written, and its ```ts blocks are vitest test files that tests/interop/test_ts_package.py compiles
under ``tsc --strict`` and runs in its one vitest run (support.tsdocs extracts them); each asserts
what its callbacks received. This module, cheaply, holds the page to that shape, so no entry can
become an untested excerpt or fall out of either run.
"""

from __future__ import annotations

import re
from pathlib import Path

from support.tsdocs import blocks, examples

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "clients.md"
ENTRIES = ["Connecting", "Elicitation, sampling and roots", "Progress and logging", "Cancellation", "Tasks"]


def _sections() -> dict[str, str]:
    """The page's level-2 sections by title."""
    parts = re.split(r"^## (.+)$", PAGE.read_text(encoding="utf-8"), flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def _blocks(text: str, info: str) -> list[str]:
    return re.findall(rf"^```{info}\n(.*?)^```$", text, flags=re.S | re.M)


def test_every_entry_has_a_python_test_and_a_typescript_test() -> None:
    sections = _sections()
    for entry in ENTRIES:
        title = next((t for t in sections if t.startswith(entry)), None)
        assert title is not None, f"docs/clients.md has no section {entry!r}"
        python, ts = _blocks(sections[title], "python"), _blocks(sections[title], "ts")
        assert len(python) == 1 and len(ts) == 1, f"{title}: one ```python and one ```ts block"
        # a pytest test, so test_docs_snippets runs it rather than only compiling it
        assert re.search(r"^def test_\w+\(mockmcp\):", python[0], flags=re.M), title
        # a vitest test file against the real mock, so the TypeScript run compiles and runs it
        assert re.search(r"^import .* from 'vitest';$", ts[0], flags=re.M), title
        assert re.search(r"^import .* from '@modelcontextprotocol/client';$", ts[0], flags=re.M), title
        assert re.search(r"^import .* from 'mockmcp-js';$", ts[0], flags=re.M), title
        assert re.search(r"^test\(", ts[0], flags=re.M), title
    text = PAGE.read_text(encoding="utf-8")
    assert "```python fragment" not in text and "```ts fragment" not in text
    assert not [lang for lang, _, _ in blocks(PAGE) if lang in ("js", "javascript")], "JavaScript left on the page"


def test_the_typescript_run_takes_every_typescript_block() -> None:
    run = {name: body for name, body in examples().items() if name.rsplit("-", 1)[0] == "clients"}
    assert sorted(run) == [f"clients-{i}.test.ts" for i in range(1, len(ENTRIES) + 1)]
    assert all(any(ts in body for body in run.values()) for ts in _blocks(PAGE.read_text(encoding="utf-8"), "ts"))


def test_the_page_is_linked() -> None:
    for page in (ROOT / "docs" / "index.md", ROOT / "README.md"):
        assert "clients.md" in page.read_text(encoding="utf-8"), f"{page.name} does not link docs/clients.md"
