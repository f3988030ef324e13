"""The pytest plugin, tested through a real pytest run: loaded through its entry point, no conftest copying.

Every inner test file below runs in one pytest process (a pytest start and the ``mcp`` import
are most of what a run costs), with ``-rA`` so each test's outcome is listed by name and a
passing test's report sections would show too; each test here checks its own files' outcomes
and output.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest
from support.process import LEAN_PYTEST_ADDOPTS, WARM_ARGV

pytestmark = [pytest.mark.interop]

SDK_TEST = '''
import anyio
import pytest
from mcp import Client, StdioServerParameters

SCENARIO = {
    "mockmcp": 1,
    "tools": [{"name": "echo", "inputSchema": {"type": "object"},
               "replies": [{"steps": [{"text": "{{ arguments.text }}"}]}]}],
    "expectations": [
        {"id": "echo", "method": "tools/call", "name": "echo", "exactly": 1},
        {"method": "tools/call", "name": "echo", "arguments": {"text": "bye"}},
    ],
}


async def use(server):
    async with Client(StdioServerParameters(**server.stdio_parameters())) as client:
        result = await client.call_tool("echo", {"text": "hi"})
        return result.content[0].text


def test_inline_dict_on_asyncio(mockmcp, tmp_path):
    server = mockmcp(SCENARIO)
    assert str(server.journal_path).startswith(str(tmp_path))
    assert anyio.run(use, server, backend="asyncio") == "hi"
    assert server.findings() == []
    assert "tools/call" in [m["method"] for m in server.received()]
    assert any(r["dir"] == "out" for r in server.journal())
    server.assert_expectations()


def test_bundled_name_on_trio(mockmcp):
    server = mockmcp("default")
    assert server.args[:4] == ["-m", "mockmcp", "run", "default"]
    assert anyio.run(use, server, backend="trio") == "hi"
    server.assert_clean()
'''

SDK_PASSING = SDK_TEST.replace('"arguments": {"text": "bye"}}', '"arguments": {"text": "hi"}}')
# the expectation on "bye" fails; its own name, so its report is told apart from test_sdk.py's
SDK_FAILING = SDK_TEST.split("\n\ndef test_bundled_name_on_trio", 1)[0].replace(
    "def test_inline_dict_on_asyncio", "def test_inline_dict_failing") + "\n"

RAW = '''
import json, subprocess

def test_raw(mockmcp):
    server = mockmcp("default")
    line = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    proc = subprocess.run(server.argv, input=(json.dumps(line) + "\\n").encode(), capture_output=True, timeout=30)
    assert proc.returncode == 0
    assert [f["check"] for f in server.findings(level="error")] == ["meta.missing"]
    assert server.report()["counts"]["requests"] == 1
    try:
        server.assert_clean()
    except AssertionError as exc:
        assert "error meta.missing" in str(exc)
    else:
        raise AssertionError("assert_clean passed despite an error finding")

def test_two_servers_two_directories(mockmcp):
    a, b = mockmcp("default"), mockmcp("default")
    assert a.report_path != b.report_path
    assert mockmcp.command("default")[1:4] == ["-m", "mockmcp", "run"]

def test_report_missing_is_explained(mockmcp):
    server = mockmcp("default")
    try:
        server.report(timeout=0.1)
    except AssertionError as exc:
        assert "wrote no report" in str(exc)
    else:
        raise AssertionError("no error")
'''

PATHS = '''
import pytest

@pytest.mark.parametrize("n", range(3))
def test_paths(mockmcp, n, tmp_path):
    server = mockmcp("default")
    assert server.directory.parent == tmp_path
'''

FAILING_WITH_A_TIMELINE = '''
import json, subprocess

def test_fails(mockmcp):
    server = mockmcp({"mockmcp": 1, "tools": [{"name": "hi"}], "expectations": [{"method": "tools/call", "name": "hi"}]})
    line = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"x": "</script><img src=x onerror=alert(1)>"}}
    subprocess.run(server.argv, input=(json.dumps(line) + "\\\\n").encode(), capture_output=True, timeout=30)
    server.assert_expectations()
'''

FILES = {"test_sdk.py": SDK_PASSING, "test_sdk_failing.py": SDK_FAILING, "test_raw.py": RAW,
         "test_paths.py": PATHS, "test_fail.py": FAILING_WITH_A_TIMELINE}


class Run(NamedTuple):
    outcomes: dict[str, str]  # "FILE::TEST" -> PASSED | FAILED | ERROR ... (the -rA summary)
    blocks: dict[str, list[str]]  # failed test name -> the lines of its report in FAILURES
    stdout: str

    def of(self, file: str) -> dict[str, str]:
        return {k.split("::", 1)[1]: v for k, v in self.outcomes.items() if k.split("::", 1)[0] == file}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    base = tmp_path_factory.mktemp("plugin")
    for name, text in FILES.items():
        (base / name).write_text(text, encoding="utf-8")
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", "--basetemp", str(base / "tmp"), *FILES]
    # a run of its own, without --mockmcp-warm: the outer run's warm server is not its (the inner
    # tests check the argv the fixture builds for a direct spawn)
    env = {k: v for k, v in os.environ.items() if k not in (WARM_ARGV, "MOCKMCP_WARM_DIR")}
    env["PYTEST_ADDOPTS"] = LEAN_PYTEST_ADDOPTS
    proc = subprocess.run(argv, cwd=base, env=env, capture_output=True, text=True, timeout=300)
    outcomes = dict((m[2], m[1]) for m in re.finditer(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+::\S+)", proc.stdout, re.M))
    blocks: dict[str, list[str]] = {}
    section = name = None
    for line in proc.stdout.splitlines():
        title = re.fullmatch(r"={3,} (.*) ={3,}", line)
        header = re.fullmatch(r"_{3,} (\S+) _{3,}", line)
        if title:
            section, name = title[1], None
        elif header and section == "FAILURES":
            name = header[1]
            blocks[name] = []
        elif name is not None:
            blocks[name].append(line)
    return Run(outcomes, blocks, proc.stdout + proc.stderr)


def test_fixture_with_the_python_sdk(run: Run) -> None:
    assert run.of("test_sdk.py") == {"test_inline_dict_on_asyncio": "PASSED", "test_bundled_name_on_trio": "PASSED"}, run.stdout
    # passing tests stay quiet: the mocks' journals show for the two failing tests only (-rA would list a passing test's)
    assert run.stdout.count("mockmcp journal (") == 2, run.stdout


def test_failed_expectation_reads_well(run: Run) -> None:
    assert run.of("test_sdk_failing.py") == {"test_inline_dict_failing": "FAILED"}, run.stdout
    block = pytest.LineMatcher(run.blocks["test_inline_dict_failing"])
    block.fnmatch_lines(
        [
            "*AssertionError: 1 of 2 expectations failed:*",
            '*expectations?1?: tools/call echo {"text": "bye"} at least 1 time: seen 0 times, expected at least 1*',
            "*requests the client sent:*",
            "*tools/call echo*",
        ]
    )
    # a failing test shows what went over the wire
    block.fnmatch_lines(["*mockmcp journal (1: *scenario.yaml)*", "*-> #* server/discover*", '*<- #* result complete "hi"*'])


def test_findings_and_report_from_a_raw_client(run: Run) -> None:
    assert run.of("test_raw.py") == dict.fromkeys(
        ["test_raw", "test_two_servers_two_directories", "test_report_missing_is_explained"], "PASSED"), run.stdout


def test_xdist_style_parallel_tests_never_share_paths(run: Run) -> None:
    assert run.of("test_paths.py") == {f"test_paths[{n}]": "PASSED" for n in range(3)}, run.stdout


def test_a_failing_test_gets_a_timeline_page(run: Run) -> None:
    assert run.of("test_fail.py") == {"test_fails": "FAILED"}, run.stdout
    block = run.blocks["test_fails"]
    pytest.LineMatcher(block).fnmatch_lines(["*mockmcp journal (1: *scenario.yaml)*", "timeline: *timeline.html"])
    path = next(line.split("timeline: ", 1)[1] for line in block if line.startswith("timeline: "))
    page = Path(path).read_text(encoding="utf-8")
    assert "lanehead mock" in page and "EXPECTATION FAILED" in page and "<img" not in page


def test_every_inner_test_is_accounted_for(run: Run) -> None:
    assert len(run.outcomes) == 10 and set(run.blocks) == {"test_inline_dict_failing", "test_fails"}, run.stdout
