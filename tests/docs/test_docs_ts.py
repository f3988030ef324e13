"""The docs' TypeScript examples are TypeScript through the mockmcp-js package, each a complete
vitest test file that tests/interop/test_ts_package.py compiles under ``tsc --strict`` and runs
against the real mock in its one vitest run (support.tsdocs writes them into the package). Here,
cheaply: the pages that teach TypeScript have such examples and no JavaScript left, and every one
of their examples is among those the run takes, so none can escape it."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from support.paths import ROOT
from support.tsdocs import DOCS_OUT, blocks, examples

PAGES = ["other-languages.md", "cookbook.md", "typescript.md"]


@pytest.mark.parametrize("page", PAGES)
def test_the_page_teaches_typescript_through_the_package(page: str) -> None:
    found = blocks(ROOT / "docs" / page)
    runnable = [text for lang, info, text in found if lang in ("ts", "typescript") and info != "fragment"]
    assert runnable, f"docs/{page} has no runnable TypeScript example"
    assert not [lang for lang, _, _ in found if lang in ("js", "javascript")], f"docs/{page} still has JavaScript examples"
    for text in runnable:
        assert re.search(r"^import .* from 'vitest';$", text, re.M), "an example is a vitest test file"
        assert re.search(r"^import .* from 'mockmcp-js';$", text, re.M), "an example goes through the package"
        assert re.search(r"^test\(", text, re.M)
    run = examples()
    stem = page.removesuffix(".md")
    assert [name for name in run if name.rsplit("-", 1)[0] == stem] == [f"{stem}-{i}.test.ts" for i in range(1, len(runnable) + 1)]
    assert all(any(text in body for body in run.values()) for text in runnable)


def test_two_workers_writing_the_examples_at_once_both_get_them_all() -> None:
    """Under ``pytest -n 2 --dist load`` each worker builds test_ts_package's module fixture, so two
    processes write the examples at once (one removed the folder as the other made it:
    FileExistsError), and either's vitest may be reading them meanwhile."""
    write = ("import sys; sys.path.insert(0, 'tests'); from support.tsdocs import write_examples\n"
             "for _ in range(30): write_examples()")
    procs = [subprocess.Popen([sys.executable, "-c", write], cwd=ROOT, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    errors = [proc.communicate(timeout=120)[1] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], errors
    expected = examples()
    assert {p.name: p.read_text() for p in DOCS_OUT.iterdir()} == expected
