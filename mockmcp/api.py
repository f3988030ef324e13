"""The small public Python API: prepare a mock to spawn, then read what the client did.

``prepare`` turns a bundled name, a file or an inline dict into a
``MockServer``: the command and arguments to give a client's stdio transport,
with a journal and a report in a directory of the caller's choosing (the
pytest plugin uses the test's ``tmp_path``, so parallel workers never share a
path). After the client has closed the mock, ``journal()``, ``report()``,
``findings()`` and ``assert_expectations()`` read the results. The mock is a
subprocess, so this works whatever async library the test suite uses. With
``control=True`` the test also drives the running mock (``controlclient``).

This module imports nothing heavy: suites import it at collection time.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

from mockmcp.controlclient import AsyncControl, ControlError, ControlOperations, SyncControl, WaitTimedOut

__all__ = ["CassetteServer", "ControlError", "MockServer", "ReportMissing", "RECORD_MODES", "WaitTimedOut", "prepare"]

RECORD_MODES = ("once", "new_episodes", "all", "none")


class ReportMissing(AssertionError):
    """The mock has not written its report (still running, killed, or ended by an ``exit`` fault)."""


_MAX_SOCKET_PATH = 100  # a Unix socket path has at most 107 bytes (Linux); longer ones go to a short temp dir


class MockServer(ControlOperations):
    """One mock process to be spawned, and the files it leaves behind.

    With ``control=True`` the mock listens on a control socket (``control_path``):
    ``await mock.wait_for(...)``, ``await mock.emit_tools_changed()``, ``await mock.arm(...)``
    and every other operation of ``AsyncControl`` are methods of the server itself (inherited
    from ``ControlOperations``, sent through ``control``), under asyncio or trio; ``mock.sync``
    has the same methods, blocking. The control channel's ``journal`` is ``mock.control.journal()``:
    ``mock.journal()`` reads the journal file.
    """

    def __init__(
        self, scenario: str, directory: Path, *, strict: bool = False, extra: tuple[str, ...] = (), control: bool = False,
        launcher: tuple[str, ...] | None = None,
    ) -> None:
        self.scenario = scenario
        self.directory = directory
        # A session directory per mock: a client that restarts the mock, or spawns it twice (the
        # TypeScript client's discover probe), is one session with one journal and one verdict.
        self.session_path = directory / "session"
        self.journal_path = self.session_path / "journal.jsonl"
        self.report_path = directory / "report.json"
        # ``launcher``: the command prefix that stands for ``mockmcp`` (the warm server's launcher,
        # ``mockmcp warm argv``); by default this interpreter's ``-m mockmcp``.
        self.command, *prefix = launcher or (sys.executable, "-m", "mockmcp")
        self.args = [*prefix, "run", scenario, "--session", str(self.session_path), "--report", str(self.report_path)]
        if strict:
            self.args.append("--strict")
        self.control_path: str | None = None
        if control:
            path = str(directory.absolute() / "control.sock")
            if len(path.encode()) > _MAX_SOCKET_PATH:
                import shutil
                import tempfile
                import weakref

                folder = tempfile.mkdtemp(prefix="mockmcp-")
                # gone with this object (or at the interpreter's exit): nothing can reach the
                # socket without it, and a suite of such mocks left a folder each in /tmp
                weakref.finalize(self, shutil.rmtree, folder, True)
                path = os.path.join(folder, "control.sock")
            self.control_path = path
            self.args += ["--control", path]
        self.args += list(extra)
        self._async: AsyncControl | None = None
        self._sync: SyncControl | None = None

    # ------------------------------------------------------------ control channel

    @property
    def control(self) -> AsyncControl:
        """The async control client (asyncio or trio); needs ``control=True``."""
        if self._async is None:
            self._async = AsyncControl(self._need_control())
        return self._async

    @property
    def sync(self) -> SyncControl:
        """The blocking twin of ``control``."""
        if self._sync is None:
            self._sync = SyncControl(self._need_control())
        return self._sync

    def _need_control(self) -> str:
        if self.control_path is None:
            raise RuntimeError("this mock has no control channel: prepare it with control=True")
        return self.control_path

    def call(self, op: str, params: dict[str, Any], pick: str | None = None) -> Any:
        """A control operation through ``control`` (an awaitable); without a control channel the
        ``RuntimeError`` comes at the call, before anything is awaited."""
        return self.control.call(op, params, pick)

    @property
    def argv(self) -> list[str]:
        """The full command line (for ``subprocess`` or a non-Python test suite)."""
        return [self.command, *self.args]

    def stdio_parameters(self) -> dict[str, Any]:
        """``command`` and ``args`` as the SDKs' stdio parameters take them.

        ``StdioServerParameters(**mock.stdio_parameters())`` with the Python SDK.
        """
        return {"command": self.command, "args": list(self.args)}

    @contextlib.contextmanager
    def http(self, address: str = "0") -> Iterator[str]:
        """Spawn the mock serving Streamable HTTP (``--http ADDRESS``, a free loopback port by
        default) and give its endpoint URL; on leaving, close its stdin (it writes its report and
        exits) and wait for it, so ``report()`` and the assertions work afterwards.

        ``async with Client(url) as client:`` with the Python SDK, inside the ``with`` block.
        """
        proc = subprocess.Popen([*self.argv, "--http", address], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert proc.stdout is not None and proc.stdin is not None
        try:
            url = proc.stdout.readline().decode().strip()
            if not url:
                raise RuntimeError(f"mockmcp exited with status {proc.wait()} before printing its URL (see stderr)")
            yield url
        finally:
            proc.stdin.close()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stdout.close()

    # ------------------------------------------------------------ results

    def journal(self) -> list[dict[str, Any]]:
        """Every journal record so far (a line that is not one, a torn last line, is skipped); empty if none yet."""
        from mockmcp.verify.journal import read_journal

        older = self.journal_path.with_name("journal.1.jsonl")  # a session's journal, rotated past its bound
        records = read_journal(older) if older.exists() else []
        if self.journal_path.exists():
            records += read_journal(self.journal_path)
        return records

    def received(self, method: str | None = None) -> list[dict[str, Any]]:
        """The messages the client sent (optionally only those of one method), in order."""
        out = []
        for r in self.journal():
            msg = r.get("message")
            if r.get("dir") == "in" and type(msg) is dict and (method is None or msg.get("method") == method):
                out.append(msg)
        return out

    def report(self, timeout: float = 5.0) -> dict[str, Any]:
        """The report the mock wrote at exit; waits up to ``timeout`` seconds for it to appear."""
        __tracebackhide__ = True
        deadline = time.monotonic() + timeout
        while True:
            try:
                report: dict[str, Any] = json.loads(self.report_path.read_text(encoding="utf-8"))
                return report
            except FileNotFoundError:
                if time.monotonic() >= deadline:
                    raise ReportMissing(
                        f"mockmcp wrote no report at {self.report_path}: the mock is still running (close the client "
                        "first), was killed with SIGKILL, or ended through an `exit` fault"
                    ) from None
                time.sleep(0.02)

    def findings(self, level: str | None = None, check: str | None = None) -> list[dict[str, Any]]:
        """Findings of the client checks, optionally only one level or one check id."""
        return [
            f
            for f in self.report()["findings"]
            if (level is None or f["level"] == level) and (check is None or f["check"] == check)
        ]

    def expectations(self) -> list[dict[str, Any]]:
        return list(self.report()["expectations"])

    def assert_expectations(self) -> None:
        """Raise ``AssertionError`` with a readable account if any expectation failed."""
        __tracebackhide__ = True  # pytest shows the caller's line, not ours
        report = self.report()
        failed = [v for v in report["expectations"] if v["verdict"] == "failed"]
        if failed:
            from mockmcp.scenario.expectations import failure_message

            raise AssertionError(failure_message(report["expectations"]) + "\n" + self._seen())

    def assert_clean(self, *, allow: tuple[str, ...] = ("warning", "note")) -> None:
        """Raise if an expectation failed or a finding has a level not in ``allow``."""
        __tracebackhide__ = True
        report = self.report()
        bad = [f for f in report["findings"] if f["level"] not in allow]
        problems = []
        failed = [v for v in report["expectations"] if v["verdict"] == "failed"]
        if failed:
            from mockmcp.scenario.expectations import failure_message

            problems.append(failure_message(report["expectations"]))
        if bad:
            problems.append(f"{len(bad)} client finding{'s' if len(bad) != 1 else ''}:")
            problems += [f"  - {f['level']} {f['check']}: {f['text']} <{f['spec']}>" for f in bad]
        if problems:
            raise AssertionError("\n".join(problems) + "\n" + self._seen())

    def _seen(self) -> str:
        lines = []
        for msg in self.received()[:30]:
            raw = msg.get("params")
            params: dict[str, Any] = raw if isinstance(raw, dict) else {}
            what = " ".join(str(params[k]) for k in ("name", "uri") if type(params.get(k)) is str)
            head = f"#{json.dumps(msg['id'])} " if "id" in msg else ""
            lines.append(f"  {head}{msg.get('method', '(response)')} {what}".rstrip())
        return "requests the client sent:\n" + ("\n".join(lines) if lines else "  (none)") + f"\njournal: {self.journal_path}"


class CassetteServer(MockServer):
    """``mockmcp record`` on a cassette: the real ``command`` is recorded or the cassette replayed.

    ``mode`` is a record mode (``once``: record when the cassette is missing, else
    replay; ``new_episodes``; ``all``; ``none``). When the cassette is replayed the
    journal and report are written as for any mock (``report()``, ``findings()``,
    ``assert_expectations()``); ``strict`` makes an unrecorded request fail the replay.
    """

    def __init__(self, path: Path, command: list[str], directory: Path, *, mode: str = "once", strict: bool = False,
                 extra: tuple[str, ...] = ()) -> None:
        if mode not in RECORD_MODES:
            raise ValueError(f"unknown record mode {mode!r}: expected one of {', '.join(RECORD_MODES)}")
        if not command:
            raise ValueError("a cassette needs the real server's command (command=[...]) to record")
        super().__init__(str(path), directory)
        self.journal_path = directory / "journal.jsonl"  # the recorder keeps its journal here (no session directory)
        self.path = path
        self.mode = mode
        self.args = ["-m", "mockmcp", "record", "-o", str(path), "--mode", mode,
                     "--journal", str(self.journal_path), "--report", str(self.report_path)]
        if strict:
            self.args.append("--strict")
        self.args += [*extra, "--", *command]
        # Decided now, as the recorder will decide it when spawned (a recording creates the file).
        self.recording = mode in ("all", "new_episodes") or (mode == "once" and not path.exists())


def prepare(
    scenario: str | os.PathLike[str] | dict[str, Any],
    directory: str | os.PathLike[str],
    *,
    strict: bool = False,
    extra: tuple[str, ...] | list[str] = (),
    control: bool = False,
    launcher: tuple[str, ...] | list[str] | None = None,
) -> MockServer:
    """A ``MockServer`` for a bundled scenario name, a scenario file or an inline dict.

    ``directory`` receives the journal, the report, (for a dict) the scenario
    file and (with ``control=True``) the control socket; give each mock its own
    directory. ``launcher``: what to spawn instead of ``python -m mockmcp`` (the warm
    server's prefix, ``mockmcp warm argv``).
    """
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    if isinstance(scenario, dict):
        path = d / "scenario.yaml"
        text = json.dumps(scenario, ensure_ascii=False, indent=1)  # JSON is YAML 1.2
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(_lone_surrogate(scenario, "scenario")) from None
        path.write_bytes(data)
        name = str(path)
    else:
        name = os.fspath(scenario)
        if os.path.exists(name):
            name = os.path.abspath(name)  # the client may spawn from another working directory
    return MockServer(name, d, strict=strict, extra=tuple(extra), control=control,
                      launcher=tuple(launcher) if launcher else None)


def _lone_surrogate(value: Any, where: str) -> str:
    """Why a scenario dict could not be written: the path to its first string holding a lone
    surrogate (``"\\ud800"``, which a JSON string can hold and UTF-8 cannot)."""
    if isinstance(value, dict):
        for key, item in value.items():
            found = _lone_surrogate(key, f"{where} (the key {key!r})") if isinstance(key, str) else ""
            found = found or _lone_surrogate(item, f"{where}.{key}")
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = _lone_surrogate(item, f"{where}[{index}]")
            if found:
                return found
    elif isinstance(value, str):
        for index, char in enumerate(value):
            if "\ud800" <= char <= "\udfff":
                return (f"{where}: a lone surrogate (U+{ord(char):04X}) at character {index}: a scenario is UTF-8 "
                        "text, which cannot hold one; use the pair it belongs to, or another character")
    return ""
