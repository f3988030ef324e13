"""The TypeScript examples of the docs: every ```ts block (not ```ts fragment) is a complete vitest
test file, run through the mockmcp-js package by tests/interop/test_ts_package.py (written into
the package's test/docs/, which is ignored by git, so its one tsc and one vitest run take them)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from support.paths import ROOT

PACKAGE = ROOT / "packages" / "mockmcp-js"
DOCS_OUT = PACKAGE / "test" / "docs"
BLOCK = re.compile(r"^```(ts|typescript|js|javascript)( [^\n]*)?\n(.*?)^```", re.S | re.M)


def blocks(doc: Path) -> list[tuple[str, str, str]]:
    """Each fenced TypeScript or JavaScript block of ``doc``: (language, info after it, text)."""
    return [(m.group(1), (m.group(2) or "").strip(), m.group(3)) for m in BLOCK.finditer(doc.read_text())]


def examples() -> dict[str, str]:
    """The runnable examples by the test file name they get: ``cookbook-2.test.ts``."""
    out: dict[str, str] = {}
    for doc in sorted((ROOT / "docs").glob("*.md")):
        runnable = [text for lang, info, text in blocks(doc) if lang in ("ts", "typescript") and info != "fragment"]
        for i, text in enumerate(runnable, 1):
            out[f"{doc.stem}-{i}.test.ts"] = f"// from docs/{doc.name}, TypeScript example {i}\n{text}"
    return out


def write_examples() -> dict[str, str]:
    """Write the examples into the package's test/docs/ (emptied first); their names and texts."""
    shutil.rmtree(DOCS_OUT, ignore_errors=True)
    DOCS_OUT.mkdir(parents=True)
    found = examples()
    for name, text in found.items():
        (DOCS_OUT / name).write_text(text)
    return found
