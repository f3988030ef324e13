"""docs/http.md's curl session runs as written against a real ``mockmcp run default --http 0``.

Every ```` ```console ```` block of docs/http.md is part of one session: a line starting
``$ `` is a command (continued by lines ending in `` \\``), the lines up to the next command
are what it prints. The commands run in one bash, in order (so ``URL=`` and ``META=`` carry
over), with the doc's example URL replaced by the real one; each command's output is compared
line by line with the doc's, where ``…`` stands for any text within the line.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from support.process import mockmcp_cmd

DOC = Path(__file__).resolve().parents[2] / "docs" / "http.md"
DOC_URL = "http://127.0.0.1:40123/mcp"  # the URL the doc pretends the mock printed
CURL = "/usr/bin/curl"
BASH = shutil.which("bash") or "/bin/bash"


def session(text: str) -> list[tuple[str, list[str]]]:
    """(command, the lines the doc shows it printing) for every command of every console block."""
    out: list[tuple[str, list[str]]] = []
    for block in re.findall(r"^```console\n(.*?)^```$", text, re.M | re.S):
        lines = block.splitlines()
        i = 0
        while i < len(lines):
            assert lines[i].startswith("$ "), f"docs/http.md: console output before any command: {lines[i]!r}"
            command = [lines[i][2:]]
            while command[-1].endswith("\\"):
                i += 1
                command.append(lines[i])
            i += 1
            shown: list[str] = []
            while i < len(lines) and not lines[i].startswith("$ "):
                shown.append(lines[i])
                i += 1
            out.append(("\n".join(command), shown))
    return out


def _matches(shown: str, got: str) -> bool:
    return re.fullmatch(".*?".join(re.escape(part) for part in shown.split("…")), got) is not None


def _trim(lines: list[str]) -> list[str]:
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


def test_the_session_parser() -> None:
    text = "x\n```console\n$ a \\\n  b\none\n\n$ c\n```\n```sh\n$ no\n```\n"
    assert session(text) == [("a \\\n  b", ["one", ""]), ("c", [])]
    assert _matches('{"id":1,…,"x":2}', '{"id":1,"a":[3],"x":2}') and not _matches("a…b", "a\nb")


def test_the_curl_session_in_http_md_runs_as_shown(tmp_path: Path) -> None:
    if not os.access(CURL, os.X_OK):
        pytest.fail(f"{CURL} is needed to run docs/http.md's curl session (Debian: apt-get install curl)")
    steps = session(DOC.read_text(encoding="utf-8"))
    assert len([c for c, _ in steps if c.startswith("curl ")]) >= 5, "docs/http.md lost its curl session"
    assert any(DOC_URL in c for c, _ in steps), f"the session no longer sets URL={DOC_URL}"

    proc = subprocess.Popen(mockmcp_cmd("run", "default", "--http", "0"), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().decode().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp"), url
        marker = "----- docs/http.md command {} -----"
        script = "".join(f"printf '\\n{marker.format(n)}\\n'\n{command.replace(DOC_URL, url)}\n" for n, (command, _) in enumerate(steps))
        env = {**os.environ, "PATH": f"{Path(CURL).parent}:{os.environ.get('PATH', '')}"}
        done = subprocess.run([BASH, "-c", script], capture_output=True, timeout=60, env=env)
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
    assert done.returncode == 0 and done.stderr == b"", done.stderr.decode()
    printed = done.stdout.decode().replace("\r\n", "\n")
    for n, (command, shown) in enumerate(steps):
        start = printed.index(marker.format(n)) + len(marker.format(n)) + 1
        end = printed.find("\n" + marker.format(n + 1), start)
        got = _trim(printed[start: end if end >= 0 else None].split("\n"))
        want = _trim(shown)
        first = command.splitlines()[0]
        assert len(got) == len(want), f"docs/http.md `{first}` printed {len(got)} lines, the doc shows {len(want)}:\n" + "\n".join(got)
        for w, g in zip(want, got):
            assert _matches(w, g), f"docs/http.md `{first}`:\n  the doc shows: {w}\n  curl printed:  {g}"
