"""``mockmcp.cassette(...)`` and ``--mockmcp-record-mode``, tested with pytester in a fresh folder.

The inner test drives the official Python client through the fixture's cassette
of the SDK's own server (tests/servers/sdk_server.py): the first run records
``cassettes/<test module>/<name>.yaml`` beside the test file; the next replays it
(the real server is not even started: its command is made unusable); the option
overrides the mode the test asks for.
"""

from __future__ import annotations

import json
import sys

import pytest
from support import zygote
from support.process import LEAN_PYTEST_ADDOPTS

pytest_plugins = ["pytester"]
pytestmark = [pytest.mark.interop, pytest.mark.usefixtures("zygote")]  # conftest
# As arguments: the pytester fixture removes PYTEST_ADDOPTS from the environment it runs pytest in.
LEAN = LEAN_PYTEST_ADDOPTS.split()

SERVER = zygote.command("sdk_server.py")  # through this worker's fork server (support.zygote)
UNUSABLE = [sys.executable, "/nonexistent/server.py"]

INNER = '''
import json
import os

import anyio
from mcp import Client, StdioServerParameters


async def use(server):
    async with Client(StdioServerParameters(**server.stdio_parameters())) as client:
        result = await client.call_tool("echo", {"text": "hi"})
        return result.content[0].text


def test_weather(mockmcp):
    command = json.loads(os.environ["SERVER_COMMAND"])
    server = mockmcp.cassette("echo", command=command, mode=os.environ.get("MODE", "once"))
    assert server.path.parts[-3:] == ("cassettes", "test_weather", "echo.yaml")
    assert server.recording == (os.environ["EXPECT"] == "record")
    assert anyio.run(use, server) == "echo: hi"
    if not server.recording:
        assert server.findings(level="error") == []
'''


def run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, expect: str, server: list[str], *args: str,
        mode: str = "once") -> pytest.RunResult:
    monkeypatch.setenv("SERVER_COMMAND", json.dumps(server))
    monkeypatch.setenv("EXPECT", expect)
    monkeypatch.setenv("MODE", mode)
    return pytester.runpytest_subprocess(*LEAN, "-p", "no:cacheprovider", "-q", *args)


def test_cassette_fixture_records_replays_and_obeys_the_option(pytester: pytest.Pytester,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_weather=INNER)
    cassette = pytester.path / "cassettes" / "test_weather" / "echo.yaml"
    run(pytester, monkeypatch, "record", SERVER).assert_outcomes(passed=1)
    assert cassette.exists() and "echo: hi" in cassette.read_text()
    recorded = cassette.read_text()
    # replay: the real server cannot even start now
    run(pytester, monkeypatch, "replay", UNUSABLE).assert_outcomes(passed=1)
    assert cassette.read_text() == recorded
    # the option wins over the test's mode: `all` records, so the unusable server now fails the test
    result = run(pytester, monkeypatch, "record", UNUSABLE, "--mockmcp-record-mode", "all")
    result.assert_outcomes(failed=1)
    assert cassette.read_text() == recorded  # a recording that never started leaves the cassette alone


def test_option_rejects_unknown_modes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess(*LEAN, "-p", "no:cacheprovider", "--mockmcp-record-mode", "sometimes")
    assert result.ret != 0
    assert "sometimes" in result.stderr.str()
