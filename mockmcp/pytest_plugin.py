"""pytest plugin (registered through the ``pytest11`` entry point; no conftest copying).

The ``mockmcp`` fixture is a factory: ``server = mockmcp("default")`` (a
bundled name, a file path or an inline dict) gives a ``MockServer`` with the
command and arguments to spawn, and its journal and report in a directory
under the test's own ``tmp_path`` (so pytest-xdist workers never share a
path). After the client is closed, ``server.report()``, ``server.findings()``,
``server.journal()`` and ``server.assert_expectations()`` tell what the
client did. The mock is a subprocess, so asyncio, anyio and trio suites use it
alike.

``mockmcp.cassette("name", command=[...], mode="once")`` puts a real server
behind ``mockmcp record``: the first run records ``cassettes/<test
module>/<name>.yaml`` beside the test file, later runs replay it, and
``--mockmcp-record-mode MODE`` overrides every test's mode for one run (as
pytest-recording's ``--record-mode`` does).

``--mockmcp-warm`` starts a warm server for the run (docs/warm.md), in a runtime
folder of its own, and stops it at the end: every mock the fixture prepares is
spawned through its launcher (forked in about 20 ms instead of a fresh
interpreter), and ``MOCKMCP_WARM_ARGV`` tells other spawners the prefix. Under
pytest-xdist the controller starts the one server all workers share.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from mockmcp.api import RECORD_MODES, CassetteServer, MockServer, prepare


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mockmcp")
    group.addoption("--mockmcp-record-mode", choices=RECORD_MODES, default=None,
                    help="record mode for every mockmcp.cassette(...) in this run, whatever the test says "
                         "(once, new_episodes, all, none)")
    group.addoption("--mockmcp-warm", action="store_true", default=False,
                    help="start a warm mockmcp server for this run and spawn every mock through it (docs/warm.md)")


WARM_ARGV = "MOCKMCP_WARM_ARGV"  # the launcher's prefix as JSON, for whoever spawns the mock (warm.paths reads it)
WARM_DIR = "MOCKMCP_WARM_DIR"


class _RunWarm:
    """The run's warm server: its folder, its pid, the variables it replaced, the write end of its
    lifeline (held until it is stopped: a run killed before then takes its server with it), and
    once stopped, the CPU seconds it spent with every mock it forked (None while it runs)."""

    def __init__(self, folder: str, pid: int, saved: dict[str, str | None], lifeline: int) -> None:
        self.folder, self.pid, self.saved, self.lifeline = folder, pid, saved, lifeline
        self.cpu: float | None = None


_WARM = pytest.StashKey[_RunWarm]()


def pytest_configure(config: pytest.Config) -> None:
    """``--mockmcp-warm``: start the run's warm server before any worker starts (they inherit
    the variables that lead to it); a worker of pytest-xdist starts none of its own."""
    if not config.getoption("--mockmcp-warm", default=False) or hasattr(config, "workerinput"):
        return
    import tempfile

    from mockmcp.warm.control import launcher_argv, start
    from mockmcp.warm.paths import warm_paths

    folder = tempfile.mkdtemp(prefix="mockmcp-warm-")  # 0700, and short enough for a socket path
    saved = {name: os.environ.get(name) for name in (WARM_DIR, WARM_ARGV)}
    os.environ[WARM_DIR] = folder
    os.environ[WARM_ARGV] = json.dumps(launcher_argv())
    lifeline, held = os.pipe()  # (neither inheritable: a worker, or a mock, never holds the write end)
    try:
        pid = start(warm_paths(), lifeline=lifeline)
    finally:
        os.close(lifeline)
    config.stash[_WARM] = _RunWarm(folder, pid, saved, held)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop the run's warm server once every test (and, under pytest-xdist, every worker) is done,
    before anything checks for processes left behind, and reap it: it is this process's child, so
    its CPU time, with that of every mock it forked and reaped, then counts in the run's own
    (``time pytest``), as a direct spawn's would."""
    warm = session.config.stash.get(_WARM, None)
    if warm is None or warm.cpu is not None:
        return
    import shutil

    from mockmcp.warm.control import stop
    from mockmcp.warm.paths import warm_paths

    if not stop(warm_paths()):  # retired (its package changed) and still serving its last mocks
        import signal

        try:
            os.kill(warm.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    try:
        _, _, usage = os.wait4(warm.pid, 0)
        warm.cpu = usage.ru_utime + usage.ru_stime  # the server and the children it waited for
    except ChildProcessError:  # not our child after all (already reaped): its figure is unknown
        warm.cpu = -1.0
    os.close(warm.lifeline)
    shutil.rmtree(warm.folder, ignore_errors=True)
    for name, value in warm.saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    warm = config.stash.get(_WARM, None)
    if warm is not None and warm.cpu is not None and warm.cpu >= 0:
        terminalreporter.write_line(f"mockmcp warm server: {warm.cpu:.1f} CPU s with the mocks it forked "
                                    "(counted in this run's CPU time: the run reaped it)")


def warm_launcher() -> tuple[str, ...] | None:
    """The warm launcher's prefix when this run has a warm server, else None."""
    from mockmcp.warm.paths import prefix_from_env

    prefix = prefix_from_env()
    return tuple(prefix) if prefix is not None else None


class MockMCP:
    """The fixture's value: a factory of mock servers for one test."""

    def __init__(self, tmp_path: Path, test_file: Path | None = None, record_mode: str | None = None) -> None:
        self.tmp_path = tmp_path
        self.test_file = test_file
        self.record_mode = record_mode
        self.servers: list[MockServer] = []

    def __call__(
        self, scenario: str | Path | dict[str, Any] = "default", *extra: str, strict: bool = False, control: bool = False
    ) -> MockServer:
        """Prepare a mock for ``scenario``; each call gets its own journal and report (and, with
        ``control=True``, a control socket: ``await server.emit_tools_changed()``, ``server.sync...``)."""
        server = prepare(scenario, self.tmp_path / f"mockmcp-{len(self.servers) + 1}", strict=strict, extra=extra,
                         control=control, launcher=warm_launcher())
        self.servers.append(server)
        return server

    def cassette(self, name: str, command: list[str], mode: str = "once", *extra: str, strict: bool = False) -> CassetteServer:
        """Record ``command`` (the real server) into ``cassettes/<test module>/<name>.yaml`` beside the
        test file, or replay that cassette, as ``mode`` (or ``--mockmcp-record-mode``) says."""
        if self.test_file is None:
            raise RuntimeError("mockmcp.cassette needs a test in a file (the cassette is stored beside it)")
        path = self.test_file.parent / "cassettes" / self.test_file.stem / f"{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        server = CassetteServer(path, list(command), self.tmp_path / f"mockmcp-{len(self.servers) + 1}",
                                mode=self.record_mode or mode, strict=strict, extra=extra)
        server.directory.mkdir(parents=True, exist_ok=True)
        self.servers.append(server)
        return server

    def command(self, scenario: str | Path | dict[str, Any], *extra: str) -> list[str]:
        """The argv that spawns ``mockmcp run`` on this scenario (with journal and report)."""
        return self(scenario, *extra).argv


@pytest.fixture
def mockmcp(request: pytest.FixtureRequest, tmp_path: Path) -> MockMCP:
    """A factory: ``mockmcp(scenario)`` -> ``MockServer`` (command, args, then journal/report/findings)."""
    path = getattr(request.node, "path", None)
    factory = MockMCP(tmp_path, Path(path) if path is not None else None,
                      request.config.getoption("--mockmcp-record-mode", default=None))
    request.node.stash[_FACTORY] = factory
    return factory


_FACTORY = pytest.StashKey[MockMCP]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """When a test that used the fixture fails, show what went over the wire.

    Each mock's section starts with the path of an HTML timeline of its journal
    (written next to the journal, to open in a browser), then the transcript.
    """
    outcome = yield
    report = outcome.get_result()
    factory = item.stash.get(_FACTORY, None)
    if factory is None or report.when != "call" or not report.failed:
        return
    for i, server in enumerate(factory.servers, 1):
        if server.journal_path.exists():
            text = f"timeline: {_timeline(server.journal_path)}\n{_transcript(server.journal_path)}"
            report.sections.append((f"mockmcp journal ({i}: {server.scenario})", text))


def _timeline(journal: Path) -> str:
    """Write the journal's HTML timeline beside it; its path, or why there is none."""
    from mockmcp.verify.journal import NotAJournal, load_journal
    from mockmcp.verify.timeline import render

    out = journal.with_name("timeline.html")
    try:
        records, torn = load_journal(journal)
        out.write_text(render(records, title=str(journal), torn=torn), encoding="utf-8")
    except (OSError, NotAJournal) as exc:
        return f"(not written: {exc})"
    return str(out)


def _transcript(path: Path, limit: int = 200) -> str:
    import io

    from mockmcp.verify.journal import print_transcript

    out = io.StringIO()
    print_transcript(path, color="never", out=out)
    lines = out.getvalue().splitlines()
    if len(lines) > limit:
        lines = lines[:limit] + [f"... {len(lines) - limit} more lines in {path}"]
    return "\n".join(lines)
