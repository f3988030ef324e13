"""Shared test helpers: the official schema, a fake link for the core, subprocess spawning.

Every line the mock writes in these tests can be checked against the official
JSON Schema of revision 2026-07-28 and the Tasks extension's (``support.schema``),
read from ``../shared`` (never copied into the project).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from support.paths import ROOT
from support.schema import SchemaChecker, checker

_FINER_UNITS = pytest.StashKey[bool]()  # the run uses the default distribution chosen below


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> Any:
    """Run on every core by default (pytest-xdist ``-n auto --dist loadscope``), so the README's
    plain ``pytest -q`` is the fast one; an explicit ``-n``/``--dist`` wins, and ``-p no:xdist``
    still runs everything in one process. Set here, not in ``addopts``, because ``-n`` in
    ``addopts`` makes ``-p no:xdist`` a usage error. A wrapper, so it runs before xdist reads
    the options.

    ``loadscope``: a module's tests run on one worker, so a module fixture (the wheel and its
    venv, the TypeScript session) is built once, not once per worker; modules without such a
    fixture are spread test by test (``pytest_xdist_make_scheduler`` below). (``xdist_group`` marks
    would be finer, but pytest-xdist 3.8 cannot apply them under pytest 9.2: it renames
    ``item._nodeid``, which pytest no longer reads.) No reordering by module size: collection
    order, slow tests first (below), is what keeps both workers busy to the end.

    And one warm server for the run (the plugin's ``--mockmcp-warm``, docs/warm.md): every mock
    a test spawns through ``support.process.mockmcp_cmd`` (or the fixture, or the interop
    matrix) is forked from it instead of starting an interpreter, most of what a spawn costs the
    suite. The run reaps the server, so its CPU time counts in the run's. ``--direct-spawn``
    runs without it; the suite passes either way, and a test about a direct spawn itself asks
    for one (``support.process.direct_cmd``)."""
    if not config.option.direct_spawn:
        config.option.mockmcp_warm = True
    if not hasattr(config, "workerinput"):
        _compile_package()
    if config.pluginmanager.hasplugin("xdist") and config.option.numprocesses is None \
            and not hasattr(config, "workerinput"):
        config.option.numprocesses = "auto"
        if config.option.dist == "no":
            config.option.dist = "loadscope"
            config.option.loadscopereorder = False
            config.stash[_FINER_UNITS] = True
    return (yield)


def _compile_package() -> None:
    """Write the package's bytecode once, before any process of the run imports it.

    An installed mockmcp has its bytecode (pip compiles a wheel as it installs it); an editable
    checkout gets it from the first import, unless ``PYTHONDONTWRITEBYTECODE`` is set (as on the
    CI machines), and then every Python process the suite starts outside the warm server (direct
    spawns, the warm command line, ``-X importtime`` runs, the docs' snippets) compiles the
    modules it imports again: over a quarter of a direct spawn's CPU each time, against a fraction
    of a second for the whole package once. Python checks a cached file against its source's size
    and time, so it never serves a stale one; a folder it cannot write to is left as it is."""
    import compileall

    compileall.compile_dir(ROOT / "mockmcp", quiet=2)


# A module whose source asks for a module-, class- or package-scoped fixture (a wheel in a venv,
# a TypeScript session, a real server) keeps its tests on one worker, so that fixture is built
# once; every other test is a work unit of its own (see pytest_xdist_make_scheduler).
_SHARED_FIXTURE = re.compile(r"""scope\s*=\s*["'](?:module|class|package)["']""")


@pytest.hookimpl(optionalhook=True)  # xdist's hook: absent under -p no:xdist
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadscope`` with finer units: a module's tests are one unit only when the module
    has a fixture shared across its tests. Grouping every module (plain loadscope) put a module of
    independent long tests (the interop matrix over stdio, then over HTTP; the documentation's
    snippets) on one worker end to end, which set the run's length while the other core idled.
    Only for the default distribution (what the README's command runs); an explicit ``--dist``
    is xdist's own."""
    if not config.stash.get(_FINER_UNITS, False):
        return None
    from xdist.scheduler import LoadScopeScheduling

    grouped: dict[str, bool] = {}

    def groups(path: str) -> bool:
        if path not in grouped:
            try:
                grouped[path] = bool(_SHARED_FIXTURE.search((Path(config.rootpath) / path).read_text(encoding="utf-8")))
            except OSError:
                grouped[path] = True  # not a file we can read (a doctest, a package): as loadscope does
        return grouped[path]

    class SharedFixtureScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return super()._split_scope(nodeid) if groups(path) else nodeid

    return SharedFixtureScheduling(config, log)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--direct-spawn", action="store_true",
                     help="spawn every mock as a fresh interpreter: no warm server for the run"
                          " (by default the suite starts one: tests/conftest.py)")
    parser.addoption("--matrix", action="store_true",
                     help="also run the tests marked matrix: the interop matrix's whole cross product"
                          " (every bundled scenario x every official client x both transports)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``matrix`` (the interop matrix's whole cross product, about 120 CPU s, which
    the default run checks a part of: tests/interop/test_interop_matrix.py) run only when asked,
    with ``--matrix`` or a ``-m`` that names them; otherwise they are deselected, not skipped.

    Tests marked ``slow`` first (a stable sort), so with xdist their modules start at once on
    their workers while the short ones fill in around them, instead of one starting last and
    running alone at the end of the run (longest first keeps both cores busy to the end)."""
    if not config.getoption("matrix") and "matrix" not in (config.option.markexpr or ""):
        deselected = [item for item in items if item.get_closest_marker("matrix")]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = [item for item in items if not item.get_closest_marker("matrix")]
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


# ---------------------------------------------------------------- no process left behind
#
# Every pytest process of a run (the controller, each xdist worker, or the one process under
# ``-n 0``) checks at the end of its session that the tests left no process running, fails the run
# naming each one, and kills them. Two ways to find them, because a leaked child is not always
# still a descendant:
#   - descendants: the ppid chains in /proc/*/stat, from this process down (a child, a client's
#     own child);
#   - a marker in the environment: ``MOCKMCP_TEST_PROCS`` holds a token ``RUN:PID`` for every
#     pytest process above, so each process spawned by a test inherits it (mockmcp copies its
#     environment to what it spawns, as do most tools), and a process that was reparented to init
#     (a daemon, a double fork, a mock whose client died) is still found in /proc/*/environ.
#     A process group or session would not do: a shell without job control keeps the whole script
#     (and its other jobs) in one group with pytest, and a test may start a new session.
#   - a warm server a test started with ``mockmcp warm start`` (which hands it a minimal
#     environment, without the marker, in a session of its own): one serving a folder the tests
#     make (``support.process.runtime_folder``, whose name holds the run's id), started after the
#     run began; only the controller looks for these, once its workers are gone.
# A worker checks for its own token and reports to the controller (``workeroutput``); the
# controller checks after its workers are gone, for any token of its run (what a worker missed, or
# a worker that died). A test that spawns with a hand-built environment (a client that passes only
# PATH and HOME) is covered while the process stays a descendant.

_PROCS_ENV = "MOCKMCP_TEST_PROCS"
_GRACE = 2.0  # seconds a process that is already on its way out gets to exit
_LEAKED = pytest.StashKey[list[str]]()
_TOKEN = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "matrix: the interop matrix's whole cross product (opt-in: --matrix or -m matrix)")
    inherited = os.environ.get(_PROCS_ENV, "")
    if hasattr(config, "workerinput"):  # an xdist worker: its controller's run, its own pid
        run = inherited.rsplit(" ", 1)[-1].partition(":")[0]
    else:  # a run of its own (a pytest a test starts is another run, checked on its own)
        run = os.urandom(6).hex()
    config.stash[_TOKEN] = f"{run}:{os.getpid()}"
    config.stash[_LEAKED] = []
    os.environ[_PROCS_ENV] = f"{inherited} {config.stash[_TOKEN]}".strip()


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session: pytest.Session) -> Any:
    """After every other ``pytest_sessionfinish``: the session's fixtures are torn down by then,
    and in the controller its xdist workers have exited."""
    result = yield
    config = session.config
    token = config.stash[_TOKEN]
    if hasattr(config, "workerinput"):
        config.workeroutput["mockmcp_leaked"] = _reap_leaks(lambda t: t == token)  # type: ignore[attr-defined]
        return result
    run = token.partition(":")[0] + ":"
    config.stash[_LEAKED].extend(_reap_leaks(lambda t: t.startswith(run), warm_servers=run[:-1]))
    if config.stash[_LEAKED] and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    return result


@pytest.hookimpl(optionalhook=True)  # xdist's hook: a worker's report has reached the controller
def pytest_testnodedown(node: Any, error: object) -> None:
    leaked = getattr(node, "workeroutput", {}).get("mockmcp_leaked", [])
    node.config.stash[_LEAKED].extend(f"[{node.gateway.id}] {line}" for line in leaked)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    leaked = config.stash.get(_LEAKED, [])
    if not leaked:
        return
    terminalreporter.section("processes left behind by the tests (killed)", sep="=", red=True, bold=True)
    for line in leaked:
        terminalreporter.write_line(line, red=True)
    # "N leaked" in the last line; as objects, since other plugins read every entry of the stats
    # as a report (hypothesis reads ``entry.__dict__``)
    terminalreporter.stats.setdefault("leaked", []).extend(_Leaked(line) for line in leaked)


class _Leaked:
    """A leaked process in the terminal's stats (counted in the summary line)."""

    def __init__(self, line: str) -> None:
        self.line = line


def _proc_table() -> dict[int, tuple[int, bytes, bytes]]:
    """Every live process: pid -> (ppid, state, start time), from /proc/PID/stat."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # it exited while we looked
            continue
        fields = stat[stat.rindex(b")") + 2:].split()  # after "pid (comm) ", which may hold spaces
        if fields[0] not in (b"Z", b"X"):  # a zombie has exited; its parent just has not reaped it
            table[int(entry.name)] = (int(fields[1]), fields[0], fields[19])
    return table


def _proc_file(pid: int, name: str) -> list[str]:
    try:
        with open(f"/proc/{pid}/{name}", "rb") as f:
            return [part.decode(errors="replace") for part in f.read().split(b"\0") if part]
    except OSError:  # gone, or not ours to read
        return []


def _leaks(ours: Callable[[str], bool], warm_servers: str = "") -> dict[tuple[int, bytes], str]:
    """(pid, start time) -> command line of each live process this process left: its descendants,
    every process whose marker holds a token ``ours`` accepts, and (``warm_servers``: a run's id)
    every warm server of a runtime folder that run's tests made."""
    table = _proc_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found = set()
    todo = list(children.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo.extend(children.get(pid, []))
    prefix = _PROCS_ENV + "="
    since = int(table[os.getpid()][2])
    for pid in table.keys() - found - {os.getpid()}:
        environ = _proc_file(pid, "environ")
        for var in environ:
            if var.startswith(prefix) and any(ours(t) for t in var[len(prefix):].split()):
                found.add(pid)
                break
        else:
            if warm_servers and int(table[pid][2]) >= since and _serves_a_tests_folder(pid, environ, warm_servers):
                found.add(pid)
    return {(pid, table[pid][2]): " ".join(_proc_file(pid, "cmdline")) or "?" for pid in found}


def _serves_a_tests_folder(pid: int, environ: list[str], run: str) -> bool:
    """Whether ``pid`` is a ``mockmcp warm serve`` of a folder this run's tests made
    (``support.process.runtime_folder``: ``/mmw-RUN-...``, ``/mmd-RUN-...``)."""
    command = " ".join(_proc_file(pid, "cmdline"))
    marks = (f"/mmw-{run}-", f"/mmd-{run}-")
    return "mockmcp warm serve" in command and any(
        var.startswith("MOCKMCP_WARM_DIR=") and any(mark in var for mark in marks) for var in environ)


def _reap_leaks(ours: Callable[[str], bool], warm_servers: str = "") -> list[str]:
    """Wait up to ``_GRACE`` for this process's leftovers to exit, then kill those still there and
    name them (pid and command line)."""
    import signal
    import time

    deadline = time.monotonic() + _GRACE
    leaks = _leaks(ours, warm_servers)
    while leaks and time.monotonic() < deadline:
        time.sleep(0.1)
        leaks = _leaks(ours, warm_servers)
    table = _proc_table()
    for pid, start in leaks:
        if pid in table and table[pid][2] == start:  # the same process, not a reused pid
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return [f"pid {pid}: {cmd}" for (pid, _), cmd in sorted(leaks.items())]


@pytest.fixture(scope="session", autouse=True)
def client_drivers() -> Iterator[None]:
    """The interop clients' driver processes a worker keeps for all its tests
    (``interop.matrix.driver``) end with its session, before the check for leaked processes."""
    yield
    matrix = sys.modules.get("interop.matrix")
    if matrix is not None:
        matrix.close_drivers()


@pytest.fixture(scope="session")
def zygote() -> Iterator[None]:
    """This worker's fork server for the real MCP servers (``support.zygote``): started by the first
    test that asks, stopped with the session, before the check for leaked processes."""
    from support import zygote as zygotes

    proc = subprocess.Popen([sys.executable, zygotes.__file__, "--serve", zygotes.SOCKET])
    deadline = time.monotonic() + 60
    while not os.path.exists(zygotes.SOCKET) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    yield
    proc.terminate()
    proc.wait(10)


@pytest.fixture(scope="session")
def schema() -> SchemaChecker:
    """The official schemas (the revision's and the Tasks extension's) as one checker (support.schema)."""
    return checker()


@pytest.fixture(scope="session")
def typescript_client() -> None:
    """The official TypeScript client, installed from the committed lockfile if it is not yet.

    Tests that run Node use this, so the README's test command needs no other step
    (tests/interop/tsclient.py: ``npm ci`` once per lockfile, under a file lock for xdist).
    Without Node >= 20 and npm they fail with the one line that names what to install.
    """
    from interop.matrix import ClientUnavailable, ts_ready

    try:
        ts_ready()
        return
    except ClientUnavailable as exc:
        message = str(exc)
    pytest.fail(message, pytrace=False)  # outside the except: the report is that line, no traceback


