"""The TypeScript examples of the docs: every ```ts block (not ```ts fragment) is a complete vitest
test file, run through the mockmcp-js package by tests/interop/test_ts_package.py (written into
the package's test/docs/, which is ignored by git, so its one tsc and one vitest run take them)."""

from __future__ import annotations

import os
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
    """Bring the package's test/docs/ to exactly the examples; their names and texts.

    Idempotent and safe beside another worker doing the same (``pytest -n 2 --dist load`` gives
    each worker its own module fixture): nothing is removed but a stale file, and each file is
    replaced whole (``os.replace``), so a concurrent vitest or tsc never sees a half-written or
    missing example."""
    DOCS_OUT.mkdir(parents=True, exist_ok=True)
    found = examples()
    for stale in DOCS_OUT.iterdir():
        if stale.name in found or stale.name.startswith("."):  # (dot files: another writer's, in flight)
            continue
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)
    for name, text in found.items():
        path = DOCS_OUT / name
        if not path.is_file() or path.read_text() != text:
            tmp = DOCS_OUT / f".{name}.{os.getpid()}"
            tmp.write_text(text)
            os.replace(tmp, path)
    return found
