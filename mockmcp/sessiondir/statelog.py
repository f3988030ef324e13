"""The session's shared state log (``state.log``): read what others appended, append this process's changes.

One line per change, appended under the session's lock: ``T ID JSON`` (a task
record), ``D ID JSON`` (an ended task's), ``E JSON`` (named state, counters,
the task serial), ``F ID`` (a task forgotten past the bound), ``J N`` (the
journal's generation). A process reads what others appended since it last
looked, so no process ever rewrites what it has not read. Past one and a half
times what it must keep (and ``COMPACT_MIN``) it is compacted: the ended
tasks' latest lines (and the ``F`` lines) go to the archive first, then the
rest is written aside and renamed over, so a reader sees the old file or the
new one (and notices the new one by its inode).

The core never sees a file: ``Engine.export_state``/``import_state`` and the
task table's records (plain JSON) are all it offers; this module does the
reading and writing.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from typing import TYPE_CHECKING, Callable

from mockmcp.core.tasks import TERMINAL
from mockmcp.sessiondir import layout
from mockmcp.sessiondir.archive import Archive
from mockmcp.sessiondir.files import cut_torn_tail, write_all, write_aside
from mockmcp.sessiondir.layout import LOG, SessionError, open_named
from mockmcp.sessiondir.rotation import JournalRotation

if TYPE_CHECKING:
    from mockmcp.core.engine import Engine
    from mockmcp.core.tasks import TaskTable

# ASCII: a task's input and result, and the named state, may hold what a client sent, a lone
# surrogate included (JSON lets it send ``\ud800``), which UTF-8 cannot encode; escaped, it
# reads back as the same value.
# A process that cannot write the session's state stops (``SessionError``: one line, status 2) rather
# than answer a change no other process, and no later one, would see.
NOT_SAVED = ("the change the last request made was not saved, so it is not answered and this process stops "
             "(the session is as it was before it); free some space, or raise the file size limit")
_encode = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode


def _stderr(text: str) -> None:
    print(f"mockmcp: {text}", file=sys.stderr)


class StateLog:
    """This process's view of ``state.log``: how far it has read, and what the log must keep."""

    def __init__(self, directory: str, archive: Archive, rotation: JournalRotation,
                 warn: Callable[[str], None] | None = None) -> None:
        self.directory = directory
        self.warn = warn or _stderr
        self._compact_floor = 0  # after a compaction failed (a full disk): not tried again before the log is past this
        self.path = os.path.join(directory, LOG)
        self._archive = archive
        self._rotation = rotation
        self._fd: int | None = None
        self._inode: int | None = None
        self._offset = 0
        self._live: dict[str, str] = {}  # task id (or "E", "J") -> its latest line, for compaction
        self._live_bytes = 0
        self._ended_bytes = 0  # of those, the ``D`` lines (compaction moves them to the archive)
        self.gone: set[str] = set()  # ids forgotten (``F``) in this generation of the log
        self._written_gen = 0  # the journal's generation as the log last said it
        self._last_state: str | None = None
        self._seen: tuple[int, int, int] | None = None  # the log's (inode, size, mtime) when last read or written
        self.corrupt_lines = 0

    def pull(self, engine: Engine) -> None:
        """Apply the lines appended since this process last read (the lock is held)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise SessionError(f"{self.path}: cannot read: {exc.strerror}") from None
        self._seen = (st.st_ino, st.st_size, st.st_mtime_ns)
        # The log is held open, so its inode cannot be reused while this process knows it by that
        # number: another inode means another file (compacted by another process).
        if self._fd is None or st.st_ino != self._inode:  # first look, or compacted: read it all
            if self._inode is not None and engine.tasks is not None:
                self._new_generation(engine.tasks)
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            self._fd = open_named(self.directory, LOG, os.O_RDWR | os.O_APPEND, "read")
            st = os.fstat(self._fd)
            self._inode = st.st_ino
            self._offset = 0
            self._live.clear()
            self._live_bytes = 0
            self._ended_bytes = 0
            self.gone.clear()
            self._compact_floor = 0
        if st.st_size <= self._offset:
            return
        try:
            data = os.pread(self._fd, st.st_size - self._offset, self._offset)
        except OSError as exc:
            raise SessionError(f"{self.path}: cannot read: {exc.strerror}") from None
        end = data.rfind(b"\n") + 1  # a line still being written is read next time
        self._offset += end
        try:
            text = data[:end].decode("utf-8")
        except UnicodeDecodeError:
            self.corrupt_lines += 1
            return
        tasks = engine.tasks
        raw = tasks.raw if tasks is not None else None
        records = tasks.records if tasks is not None else {}
        watchers = tasks.watchers if tasks is not None else {}
        watched_changed = False
        state: str | None = None
        # One pass, no JSON: a task record stays text until the task is looked at (a
        # session of 10,000 ended tasks starts without parsing one of them).
        for line in text.split("\n")[:-1]:
            kind = line[:2]
            if (kind == "T " or kind == "D ") and raw is not None:
                tid, _, body = line[2:].partition(" ")
                if not (body.startswith("{") and body.endswith("}")):  # (the record is parsed when looked at)
                    self.corrupt_lines += 1
                    continue
                records.pop(tid, None)
                raw[tid] = body
                if tid in watchers:
                    watched_changed = True
                self._remember(tid, line)
            elif kind == "E ":
                if not (line.startswith("E {") and line.endswith("}")):
                    self.corrupt_lines += 1
                    continue
                state = line[2:]
                self._remember("E", line)
            elif kind == "J ":
                if not line[2:].isdigit():
                    self.corrupt_lines += 1
                    continue
                self._remember("J", line)
                self._written_gen = int(line[2:])
                self._rotation.heard(self._written_gen)
            elif kind == "F ":
                tid = line[2:]
                records.pop(tid, None)
                if tid in watchers:
                    watched_changed = True
                if raw is not None:
                    raw.pop(tid, None)
                self._forget(tid)
                self.gone.add(tid)
            else:
                self.corrupt_lines += 1
        if watched_changed:
            tasks.changed = True  # a listen stream here watches a task another process changed: wake it
        if state is not None:
            self._last_state = state
            try:
                engine.import_state(json.loads(state))
            except (ValueError, RecursionError):  # a state record that does not fit (json's errors are ValueErrors too)
                self.corrupt_lines += 1

    def _new_generation(self, tasks: TaskTable) -> None:
        """Another process compacted the log: what this one read of the old one may be stale (an
        ended task's latest change may now be in the archive only), so it is read again when asked."""
        tasks.raw.clear()
        dirty = tasks.dirty
        for tid in [t for t in tasks.records if t not in dirty]:
            del tasks.records[tid]
        if tasks.watchers:  # a watched task may have changed and moved to the archive: streams look again
            tasks.changed = True

    def push(self, engine: Engine) -> None:
        """Append what changed since the last push (the lock is held, the log read to its end)."""
        lines: list[str] = []
        tasks = engine.tasks
        if tasks is not None:
            for rec in tasks.take_dirty():
                line = f"{'D' if rec.status in TERMINAL else 'T'} {rec.id} {_encode(rec.to_json())}"
                lines.append(line)
                self._remember(rec.id, line)
            for tid in tasks.forgotten:
                lines.append(f"F {tid}")
                self._forget(tid)
                self.gone.add(tid)
            tasks.forgotten.clear()
        if self._rotation.generation != self._written_gen:
            self._written_gen = self._rotation.generation
            line = f"J {self._written_gen}"
            lines.append(line)
            self._remember("J", line)
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
        start = self._offset  # (the pull read the log to its last newline)
        try:
            start = cut_torn_tail(fd)  # (a process stopped mid-line left it: appended onto, it would poison the log)
            write_all(fd, data)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)  # what was written of these lines: the log stays as it was
            raise SessionError(f"{self.path}: cannot write: {exc.strerror}; {NOT_SAVED}") from None
        self._offset = start + len(data)
        st = os.fstat(fd)  # (the lock is held: nobody else wrote since the pull)
        self._seen = (st.st_ino, st.st_size, st.st_mtime_ns)
        if self._offset > max(layout.COMPACT_MIN, self._compact_floor) and self._offset > 1.5 * (self._live_bytes - self._ended_bytes):
            try:
                self._compact()
            except OSError as exc:  # (the log and the archive stay whole: a torn append is cut, a rewrite renamed over)
                self._compact_floor = 2 * self._offset
                self.warn(f"{self.path}: cannot compact: {exc.strerror}; the session is whole and this process serves on,"
                           " the log growing until it has doubled, when compaction is tried again (free some space)")

    def _log(self) -> int:
        if self._fd is None:  # (no log yet: this process makes it)
            self._fd = open_named(self.directory, LOG, os.O_RDWR | os.O_APPEND | os.O_CREAT)
            self._inode = os.fstat(self._fd).st_ino
        return self._fd

    def _compact(self) -> None:
        """The ended tasks' lines (and what was forgotten) to the archive first, then the log
        without them: a crash in between leaves both copies, which agree (the log wins)."""
        ended = [line for line in self._live.values() if line[0] == "D"]
        if ended or self.gone:
            self._archive.append(ended + [f"F {tid}" for tid in self.gone])
            for line in ended:
                self._forget(line[2:].partition(" ")[0])
            self.gone.clear()
        data = ("\n".join(self._live.values()) + "\n").encode("utf-8") if self._live else b""
        write_aside(self.path, data)
        if self._fd is not None:
            os.close(self._fd)
        self._fd = open_named(self.directory, LOG, os.O_RDWR | os.O_APPEND)
        st = os.fstat(self._fd)
        self._inode = st.st_ino
        self._offset = len(data)
        self._seen = (st.st_ino, st.st_size, st.st_mtime_ns)

    def changed_on_disk(self) -> bool:
        """Did another process write the log since this one last read or wrote it? (One ``stat``,
        no lock: the watcher of listen streams asks it every ``WATCH_INTERVAL``.)"""
        try:
            st = os.stat(self.path)
        except OSError:
            return False  # no log yet (or gone for a moment): the next look will tell
        return (st.st_ino, st.st_size, st.st_mtime_ns) != self._seen

    def _remember(self, key: str, line: str) -> None:
        old = self._live.get(key)
        if old is not None:
            self._live_bytes -= len(old) + 1
            if old[0] == "D":
                self._ended_bytes -= len(old) + 1
        self._live[key] = line
        self._live_bytes += len(line) + 1
        if line[0] == "D":
            self._ended_bytes += len(line) + 1

    def _forget(self, key: str) -> None:
        old = self._live.pop(key, None)
        if old is not None:
            self._live_bytes -= len(old) + 1
            if old[0] == "D":
                self._ended_bytes -= len(old) + 1


__all__ = ["StateLog"]
