"""Session directories (``mockmcp run SCENARIO --session DIR``): one session over many processes.

A client may kill and restart the mock, or spawn it twice (the TypeScript
client's discover probe), or run several at once; with the same ``DIR`` they
all share the tasks, the named state, the rule counters and the journal.

What is in ``DIR``:

- ``VERSION``: ``mockmcp session 1``. Another text (another mockmcp's format)
  is refused at start-up, and nothing in the directory is touched.
- ``session.json``: the scenario the session belongs to (another scenario is
  refused: stored tasks name their script by its place in the file).
- ``state.log``: the shared state, one line per change, appended: ``T ID JSON``
  (a task record), ``E JSON`` (named state, counters, the task serial), ``F ID``
  (a task forgotten past the bound). A process reads what others appended
  since it last looked, so no process ever rewrites what it has not read.
  When the log grows past one and a half times what is live in it (and 1 MiB), it is
  compacted to the live lines: written aside, then renamed over, so a reader
  sees the old file or the new one (it notices the new one by its inode).
- ``lock``: every input chunk is handled under ``fcntl.flock`` on it: read the
  log's new lines, handle, append the changes, unlock. So no update is lost
  whatever the number of processes.
- ``journal.jsonl``: the journal of every process (``mockmcp report DIR``
  judges the session from it).

The core never sees a file: ``Engine.export_state``/``import_state`` and the
task table's records (plain JSON) are all it offers; this shell-side module
does the reading, writing and locking.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from typing import Any, Iterator

MARKER = "VERSION"
MARKER_TEXT = "mockmcp session 1\n"
META = "session.json"
LOG = "state.log"
LOCK = "lock"
JOURNAL = "journal.jsonl"
COMPACT_MIN = 1 << 20  # bytes of log before compaction is considered
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


class SessionError(Exception):
    """A session directory that cannot be used; the message says why (nothing was changed)."""


class SessionStore:
    def __init__(self, path: str, scenario: str) -> None:
        self.dir = path
        self.scenario = scenario
        self._open_dir()
        self._lock_fd = self._open(LOCK, os.O_RDWR | os.O_CREAT)
        self._log_fd: int | None = None
        self._inode: int | None = None
        self._offset = 0
        self._live: dict[str, str] = {}  # task id (or "E") -> its latest line, for compaction
        self._live_bytes = 0
        self._last_state: str | None = None
        self.corrupt_lines = 0

    # ------------------------------------------------------------ opening

    def _path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def _open(self, name: str, flags: int) -> int:
        try:
            return os.open(self._path(name), flags | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            raise SessionError(f"{self._path(name)}: cannot open: {exc.strerror}") from None

    def _open_dir(self) -> None:
        try:
            os.makedirs(self.dir, exist_ok=True)
            entries = os.listdir(self.dir)
        except OSError as exc:
            raise SessionError(f"{self.dir}: cannot use as a session directory: {exc.strerror}") from None
        if MARKER not in entries:
            if entries:
                raise SessionError(
                    f"{self.dir}: not a mockmcp session directory (no {MARKER} file, and not empty); nothing in it was changed"
                )
            self._create()
            return
        try:
            with open(self._path(MARKER), encoding="utf-8") as fh:
                marker = fh.read(200)
        except (OSError, UnicodeDecodeError) as exc:
            raise SessionError(f"{self._path(MARKER)}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
        if marker != MARKER_TEXT:
            raise SessionError(
                f"{self.dir}: written by another mockmcp version ({marker.strip()[:60]!r}; this one reads "
                f"{MARKER_TEXT.strip()!r}); nothing in it was changed"
            )
        try:
            with open(self._path(META), encoding="utf-8") as fh:
                meta = json.load(fh)
        except (OSError, ValueError) as exc:
            raise SessionError(f"{self._path(META)}: unreadable or corrupt ({getattr(exc, 'strerror', None) or exc}); nothing was changed") from None
        if type(meta) is not dict or meta.get("scenario") != self.scenario:
            owner = meta.get("scenario") if type(meta) is dict else None
            raise SessionError(f"{self.dir}: belongs to scenario {owner!r}, not {self.scenario!r}; use another directory")

    def _create(self) -> None:
        for name, text in ((META, json.dumps({"mockmcp": 1, "scenario": self.scenario}) + "\n"), (MARKER, MARKER_TEXT)):
            tmp = self._path(f".{name}.{os.getpid()}.tmp")
            try:
                with open(tmp, "w", encoding="utf-8") as fh:
                    fh.write(text)
                if name == MARKER and os.path.exists(self._path(MARKER)):
                    os.unlink(tmp)  # another process created the session first: keep its files
                    continue
                os.replace(tmp, self._path(name))
            except OSError as exc:
                raise SessionError(f"{self._path(name)}: cannot write: {exc.strerror}") from None

    @property
    def journal(self) -> str:
        return self._path(JOURNAL)

    # ------------------------------------------------------------ the lock

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    # ------------------------------------------------------------ reading what others wrote

    def pull(self, engine: Any) -> None:
        """Apply the lines appended since this process last read (the lock is held)."""
        try:
            st = os.stat(self._path(LOG))
        except FileNotFoundError:
            return
        except OSError as exc:
            raise SessionError(f"{self._path(LOG)}: cannot read: {exc.strerror}") from None
        if st.st_ino != self._inode:  # first look, or compacted by another process: read it all
            self._inode = st.st_ino
            self._offset = 0
            self._live.clear()
            self._live_bytes = 0
            if self._log_fd is not None:
                os.close(self._log_fd)
                self._log_fd = None
        if st.st_size <= self._offset:
            return
        try:
            with open(self._path(LOG), "rb") as fh:
                fh.seek(self._offset)
                data = fh.read(st.st_size - self._offset)
        except OSError as exc:
            raise SessionError(f"{self._path(LOG)}: cannot read: {exc.strerror}") from None
        end = data.rfind(b"\n") + 1  # a line still being written is read next time
        self._offset += end
        try:
            text = data[:end].decode("utf-8")
        except UnicodeDecodeError:
            self.corrupt_lines += 1
            return
        tasks = engine.tasks
        live = self._live
        raw = tasks.raw if tasks is not None else None
        records = tasks.records if tasks is not None else {}
        state: str | None = None
        # One pass, no JSON: a task record stays text until the task is looked at (a
        # session of 10,000 ended tasks starts without parsing one of them).
        for line in text.split("\n")[:-1]:
            kind = line[:2]
            if kind == "T " and raw is not None:
                tid, _, body = line[2:].partition(" ")
                if not body.startswith("{"):
                    self.corrupt_lines += 1
                    continue
                records.pop(tid, None)
                raw[tid] = body
                old = live.get(tid)
                self._live_bytes += len(line) + 1 - (len(old) + 1 if old is not None else 0)
                live[tid] = line
            elif kind == "E ":
                if not (line.startswith("E {") and line.endswith("}")):
                    self.corrupt_lines += 1
                    continue
                state = line[2:]
                self._remember("E", line)
            elif kind == "F ":
                tid = line[2:]
                records.pop(tid, None)
                if raw is not None:
                    raw.pop(tid, None)
                self._forget(tid)
            else:
                self.corrupt_lines += 1
        if state is not None:
            self._last_state = state
            try:
                engine.import_state(json.loads(state))
            except (ValueError, KeyError, IndexError, TypeError):  # a state record that does not fit
                self.corrupt_lines += 1

    def check(self, engine: Any) -> None:
        """At start-up: read the whole log, so a corrupt directory is refused before serving."""
        with self.locked():
            self.pull(engine)
        if self.corrupt_lines:
            raise SessionError(f"{self._path(LOG)}: corrupt ({self.corrupt_lines} unreadable lines); nothing was changed")

    # ------------------------------------------------------------ writing this process's changes

    def push(self, engine: Any) -> None:
        """Append what changed since the last push (the lock is held, the log read to its end)."""
        lines: list[str] = []
        tasks = engine.tasks
        if tasks is not None:
            for rec in tasks.take_dirty():
                line = f"T {rec.id} {_encode(rec.to_json())}"
                lines.append(line)
                self._remember(rec.id, line)
            for tid in tasks.forgotten:
                lines.append(f"F {tid}")
                self._forget(tid)
            tasks.forgotten.clear()
        state = _encode(engine.export_state())
        if state != self._last_state:
            self._last_state = state
            line = "E " + state
            lines.append(line)
            self._remember("E", line)
        if not lines:
            return
        data = ("\n".join(lines) + "\n").encode("utf-8")
        fd = self._log()
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
        self._offset += len(data)
        if self._offset > COMPACT_MIN and self._offset > 1.5 * self._live_bytes:
            self._compact()

    def _log(self) -> int:
        if self._log_fd is None:
            self._log_fd = self._open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            st = os.fstat(self._log_fd)
            self._inode = st.st_ino
        return self._log_fd

    def _compact(self) -> None:
        tmp = self._path(f".{LOG}.{os.getpid()}.tmp")
        data = ("\n".join(self._live.values()) + "\n").encode("utf-8") if self._live else b""
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, self._path(LOG))
        if self._log_fd is not None:
            os.close(self._log_fd)
            self._log_fd = None
        self._inode = os.stat(self._path(LOG)).st_ino
        self._offset = len(data)

    def _remember(self, key: str, line: str) -> None:
        old = self._live.get(key)
        if old is not None:
            self._live_bytes -= len(old) + 1
        self._live[key] = line
        self._live_bytes += len(line) + 1

    def _forget(self, key: str) -> None:
        old = self._live.pop(key, None)
        if old is not None:
            self._live_bytes -= len(old) + 1


class SessionConnection:
    """A ``Connection`` whose every input chunk (or HTTP message) is handled inside the session's lock.

    The shell sees the connection it knows (everything else is the wrapped one's).
    """

    def __init__(self, conn: Any, store: SessionStore) -> None:
        self._conn = conn
        self._store = store
        self.engine = conn.engine

    def receive_data(self, data: bytes) -> Any:
        with self._store.locked():
            self._store.pull(self.engine)
            out = self._conn.receive_data(data)
            self._store.push(self.engine)
        return out

    def handle_line(self, line: Any, check: Any = None) -> Any:
        """One message (the HTTP shell's unit: a POST body), inside the lock like a chunk of stdin."""
        with self._store.locked():
            self._store.pull(self.engine)
            out = self._conn.handle_line(line, check)
            self._store.push(self.engine)
        return out

    def receive_eof(self) -> Any:
        with self._store.locked():
            self._store.pull(self.engine)
            out = self._conn.receive_eof()
            self._store.push(self.engine)
        return out

    @contextlib.contextmanager
    def synced(self) -> Iterator[None]:
        """Work on the engine from outside an input chunk (a control operation) the same way: inside
        the lock, after reading what other processes appended, appending what changed."""
        with self._store.locked():
            self._store.pull(self.engine)
            yield
            self._store.push(self.engine)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def scenario_ref(scenario: str) -> str:
    """How session.json names the scenario: a file's absolute path, or the bundled name."""
    return os.path.abspath(scenario) if os.path.isfile(scenario) else scenario


__all__ = ["JOURNAL", "SessionConnection", "SessionError", "SessionStore", "scenario_ref"]
