"""The TypeScript snippets of the docs run against the real TS SDK client: the one in
docs/other-languages.md, and the live-control recipe of docs/cookbook.md."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TS = ROOT / "tests" / "interop" / "ts"


def _run_js(doc: str) -> list[str]:
    text = (ROOT / "docs" / doc).read_text()
    blocks = re.findall(r"```js\n(.*?)```", text, re.S)
    assert len(blocks) == 1
    script = TS / f"docs-snippet-{os.getpid()}.mjs"  # inside the package so imports resolve
    script.write_text(blocks[0])
    try:
        env = {**os.environ, "MOCKMCP_PYTHON": sys.executable}
        proc = subprocess.run(["node", str(script)], cwd=TS, env=env, capture_output=True, text=True, timeout=120)
    finally:
        script.unlink()
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.splitlines()


@pytest.mark.usefixtures("typescript_client")
def test_typescript_snippet_runs(tmp_path: Path) -> None:
    assert _run_js("other-languages.md") == ["echo, add, get_weather", "hello"]


@pytest.mark.usefixtures("typescript_client")
def test_typescript_control_recipe_runs(tmp_path: Path) -> None:
    assert _run_js("cookbook.md") == ["true", "backend down", "o/"]
