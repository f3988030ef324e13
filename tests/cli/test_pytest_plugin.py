"""The pytest plugin, tested with pytester: loaded through its entry point, no conftest copying."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

pytestmark = [pytest.mark.interop, pytest.mark.usefixtures("lean_pytest")]  # conftest

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


def test_fixture_with_the_python_sdk(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_sdk=SDK_TEST.replace('"arguments": {"text": "bye"}}', '"arguments": {"text": "hi"}}'))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=2)
    assert "mockmcp journal" not in result.stdout.str()  # passing tests stay quiet


def test_failed_expectation_reads_well(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_sdk=SDK_TEST.replace("    server.assert_expectations()\n", "    server.assert_expectations()\n", 1))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", "-k", "inline")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*AssertionError: 1 of 2 expectations failed:*",
            '*expectations?1?: tools/call echo {"text": "bye"} at least 1 time: seen 0 times, expected at least 1*',
            "*requests the client sent:*",
            "*tools/call echo*",
        ]
    )
    # a failing test shows what went over the wire
    result.stdout.fnmatch_lines(["*mockmcp journal (1: *scenario.yaml)*", "*-> #* server/discover*", '*<- #* result complete "hi"*'])


def test_findings_and_report_from_a_raw_client(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_raw='''
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
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=3)


def test_xdist_style_parallel_tests_never_share_paths(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_paths='''
import pytest

@pytest.mark.parametrize("n", range(3))
def test_paths(mockmcp, n, tmp_path):
    server = mockmcp("default")
    assert server.directory.parent == tmp_path
'''
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=3)


def test_a_failing_test_gets_a_timeline_page(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_fail='''
import json, subprocess

def test_fails(mockmcp):
    server = mockmcp({"mockmcp": 1, "tools": [{"name": "hi"}], "expectations": [{"method": "tools/call", "name": "hi"}]})
    line = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"x": "</script><img src=x onerror=alert(1)>"}}
    subprocess.run(server.argv, input=(json.dumps(line) + "\\\\n").encode(), capture_output=True, timeout=30)
    server.assert_expectations()
'''
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*mockmcp journal (1: *scenario.yaml)*", "timeline: *timeline.html"])
    path = next(line.split("timeline: ", 1)[1] for line in result.stdout.lines if line.startswith("timeline: "))
    page = open(path, encoding="utf-8").read()
    assert "lanehead mock" in page and "EXPECTATION FAILED" in page and "<img" not in page
