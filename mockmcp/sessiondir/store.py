"""Session directories (``mockmcp run SCENARIO --session DIR``): one session over many processes.

A client may kill and restart the mock, or spawn it twice (the TypeScript
client's discover probe), or run several at once; with the same ``DIR`` they
all share the tasks, the named state, the rule counters and the journal.

What is in ``DIR``:

- ``VERSION``: ``mockmcp session 2``. Another text (another mockmcp's format)
  is refused at start-up, and nothing in the directory is touched.
- ``session.json``: the scenario the session belongs to (another scenario is
  refused: stored tasks name their script by its place in the file).
- ``state.log``: the shared state, one line per change, appended: ``T ID JSON``
  (a task record), ``D ID JSON`` (the record of an ended task: completed, failed
  or cancelled), ``E JSON`` (named state, counters, the task serial), ``F ID``
  (a task forgotten past the bound). A process reads what others appended
  since it last looked, so no process ever rewrites what it has not read.
  When the log grows past one and a half times what it must keep (and
  ``COMPACT_MIN``), it is compacted: the ended tasks' latest lines (and the
  ``F`` lines) are appended to ``ended.log``, then the rest is written aside and
  renamed over, so a reader sees the old file or the new one (it notices the
  new one by its inode). So the log a process reads at start-up holds the
  tasks still going and the recent changes, not every task the session ever had.
- ``ended.log``: the archive of ended tasks, ``mockmcp ended 2 BASE`` then
  ``T``/``D``/``F`` lines, appended only under the lock; a later line for an
  id wins, and the log wins over it (whatever it holds was moved from an
  older log). It is read only when a request asks for a task the log does not
  know (the index of ids to offsets is built then, once, and followed as it
  grows; a record is read with one ``pread`` and parsed when asked for). When
  it grows past twice ``BASE`` (its size when last rewritten) it is rewritten
  with each id's latest line, at most ``tasks.MAX_RECORDS`` of them (the
  oldest ended tasks are forgotten), written aside and renamed over. A torn
  last line (a process killed while appending) is cut off before the next
  append: its content is still in the log, which was not yet replaced.
- ``lock``: every input chunk is handled under ``fcntl.flock`` on it: read the
  log's new lines, handle, append the changes, unlock. So no update is lost
  whatever the number of processes.
- ``journal.jsonl``: the journal of every process (``mockmcp report DIR``
  judges the session from it). Bounded: every ``JOURNAL_CHECK`` bytes a
  process wrote, it looks (under the lock) whether the file is past
  ``JOURNAL_ROTATE`` (or ``JOURNAL_JUDGE`` of it not yet judged: then the
  verdict is carried on, so a rotation reads little); then the verdict so far is saved (``judged.json``: the
  aggregates a verdict needs and how far each file was read), the file is
  renamed ``journal.1.jsonl`` (the one before is dropped: the saved verdict
  has counted it) and a ``J N`` line in the state log tells every process
  to reopen ``journal.jsonl`` when it next reads the log (records written
  before that land in ``journal.1.jsonl``, which the next verdict reads too).

- ``judged.json``: the session's verdict so far (``sessionreport``), saved at
  every process's exit, every ``JOURNAL_JUDGE`` bytes of journal and before a rotation.

Every one of these files is opened without following a symbolic link
(``O_NOFOLLOW``; files written aside are made with ``O_EXCL``), and at start-up
a link, a folder or anything else that is not a regular file at one of these
names is refused (``SessionError``: one line, exit status 2) before anything
is read or written: a link planted in the directory can never make a mock
append to, or replace, a file outside it, and a FIFO can never make it wait.

A process with a listen stream watching tasks also looks at the log's
``stat`` every ``WATCH_INTERVAL`` and, when another process wrote it, reads
the new lines under the lock at once (``SessionConnection.watch``), so the
stream hears of the change without waiting for this process's next request.

The core never sees a file: ``Engine.export_state``/``import_state`` and the
task table's records (plain JSON) are all it offers; this shell-side module
does the reading, writing and locking.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import stat
from typing import TYPE_CHECKING, Any, Callable, Iterator

from mockmcp.scenario.loader import file_kind
from mockmcp.core.tasks import MAX_RECORDS, TERMINAL, CorruptRecord

if TYPE_CHECKING:
    from mockmcp.wire import jsonrpc
    from mockmcp.core.actions import Output
    from mockmcp.core.connection import Connection, InboundObserver, PlanObserver
    from mockmcp.wire.framing import Oversized

MARKER = "VERSION"
MARKER_TEXT = "mockmcp session 2\n"
META = "session.json"
LOG = "state.log"
ARCHIVE = "ended.log"
ARCHIVE_HEAD = "mockmcp ended 2 "  # then BASE (its size when it was last written whole) and a newline
LOCK = "lock"
JOURNAL = "journal.jsonl"
OLDER_JOURNAL = "journal.1.jsonl"
JOURNAL_ROTATE = 32 << 20  # bytes of journal.jsonl past which it is rotated (so at most about twice this is kept)
JOURNAL_CHECK = 1 << 20  # bytes a process writes to the journal between two looks at its size
JOURNAL_JUDGE = 4 << 20  # bytes of journal not yet judged past which the verdict is carried on (and saved)
COMPACT_MIN = 1 << 20  # bytes of log before compaction is considered
# How often a process with a listen stream watching tasks looks (one stat) for other processes' changes.
WATCH_INTERVAL = 0.05
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
# Every file a session directory holds (start-up refuses any of them that is a link or not a regular file).
FILES = (MARKER, META, LOG, ARCHIVE, LOCK, JOURNAL, OLDER_JOURNAL, "judged.json")
MAX_META = 64 * 1024  # bytes of session.json read (it names a scenario)
_FLAGS = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class SessionError(Exception):
    """A session directory that cannot be used; the message says why (nothing was changed)."""


class SessionStore:
    def __init__(self, path: str, scenario: str) -> None:
        self.dir = path
        self.scenario = scenario
        self._lock_fd = -1
        self._open_dir()  # (opens the lock when it creates the session)
        if self._lock_fd < 0:
            self._lock_fd = self._open(LOCK, os.O_RDWR | os.O_CREAT)
        self._log_fd: int | None = None
        self._inode: int | None = None
        self._offset = 0
        self._live: dict[str, str] = {}  # task id (or "E") -> its latest line, for compaction
        self._live_bytes = 0
        self._ended_bytes = 0  # of those, the ``D`` lines (compaction moves them to the archive)
        self._gone: set[str] = set()  # ids forgotten (``F``) in this generation of the log
        # The archive of ended tasks, indexed only when a lookup first needs it.
        self._arch_fd: int | None = None
        self._arch_inode: int | None = None
        self._arch_offset = 0  # how far the index has read
        self._arch_index: dict[str, tuple[int, int]] = {}  # task id -> (offset, length) of its record
        self._arch_bad = 0  # unreadable lines in it
        self.journal_gen = 0  # bumped (a ``J`` line) each time the journal is rotated
        self._written_gen = 0
        self.on_journal_rotated: Callable[[], None] | None = None
        self._last_state: str | None = None
        self._seen: tuple[int, int, int] | None = None  # the log's (inode, size, mtime) when last read or written
        self.corrupt_lines = 0

    # ------------------------------------------------------------ opening

    def _path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def _open(self, name: str, flags: int, what: str = "open") -> int:
        try:
            return open_file(self._path(name), flags)
        except OSError as exc:
            raise SessionError(f"{self._path(name)}: cannot {what}: {exc.strerror}") from None

    def _check_files(self) -> None:
        """Refuse a link, a folder or anything else that is not a regular file at a session file's
        name, before anything is opened (a FIFO would block a read; a link would be written through)."""
        for name in FILES:
            path = self._path(name)
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise SessionError(f"{path}: cannot look at: {exc.strerror}") from None
            if stat.S_ISLNK(st.st_mode):
                raise SessionError(
                    f"{path}: is a symbolic link, and files in a session directory are never followed through links; nothing was changed"
                )
            if not stat.S_ISREG(st.st_mode):
                raise SessionError(f"{path}: is {file_kind(st.st_mode)}, not a regular file; nothing was changed")

    def _open_dir(self) -> None:
        try:
            os.makedirs(self.dir, exist_ok=True)
            entries = os.listdir(self.dir)
        except OSError as exc:
            raise SessionError(f"{self.dir}: cannot use as a session directory: {exc.strerror}") from None
        self._check_files()
        if MARKER not in entries:
            if not all(_made_by_us(name) for name in entries):
                raise SessionError(
                    f"{self.dir}: not a mockmcp session directory (no {MARKER} file, and not empty); nothing in it was changed"
                )
            # Empty, or another process is making the session right now (processes started at
            # once): make it under the lock, or find it made, so no process sees it half made.
            self._lock_fd = self._open(LOCK, os.O_RDWR | os.O_CREAT)
            with self.locked():
                if not os.path.exists(self._path(MARKER)):
                    self._create()
        try:
            marker = read_file(self._path(MARKER), 200).decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SessionError(f"{self._path(MARKER)}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
        if marker != MARKER_TEXT:
            raise SessionError(
                f"{self.dir}: written by another mockmcp version ({marker.strip()[:60]!r}; this one reads "
                f"{MARKER_TEXT.strip()!r}); nothing in it was changed"
            )
        try:
            meta = json.loads(read_file(self._path(META), MAX_META))
        except (OSError, ValueError, RecursionError) as exc:
            why = getattr(exc, "strerror", None) or ("nested too deeply" if isinstance(exc, RecursionError) else exc)
            raise SessionError(f"{self._path(META)}: unreadable or corrupt ({why}); nothing was changed") from None
        if type(meta) is not dict or meta.get("scenario") != self.scenario:
            owner = meta.get("scenario") if type(meta) is dict else None
            raise SessionError(f"{self.dir}: belongs to scenario {owner!r}, not {self.scenario!r}; use another directory")

    def _create(self) -> None:
        """Write ``session.json`` then ``VERSION`` (the lock is held). A ``session.json`` already
        there is a session made halfway by a process that died; anything else in it is not ours."""
        try:
            old = json.loads(read_file(self._path(META), MAX_META))
        except FileNotFoundError:
            old = {"mockmcp": 1}
        except (OSError, ValueError, RecursionError):
            old = None
        if type(old) is not dict or old.get("mockmcp") != 1:
            raise SessionError(f"{self.dir}: not a mockmcp session directory (a {META} that is not one); nothing in it was changed")
        for name, text in ((META, json.dumps({"mockmcp": 1, "scenario": self.scenario}) + "\n"), (MARKER, MARKER_TEXT)):
            try:
                if name == MARKER and os.path.lexists(self._path(MARKER)):
                    continue  # another process created the session first: keep its files
                write_aside(self._path(name), text.encode("utf-8"))
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
        self._seen = (st.st_ino, st.st_size, st.st_mtime_ns)
        # The log is held open, so its inode cannot be reused while this process knows it by that
        # number: another inode means another file (compacted by another process).
        if self._log_fd is None or st.st_ino != self._inode:  # first look, or compacted: read it all
            if self._inode is not None and engine.tasks is not None:
                self._new_generation(engine.tasks)
            if self._log_fd is not None:
                os.close(self._log_fd)
                self._log_fd = None
            self._log_fd = self._open(LOG, os.O_RDWR | os.O_APPEND, "read")
            st = os.fstat(self._log_fd)
            self._inode = st.st_ino
            self._offset = 0
            self._live.clear()
            self._live_bytes = 0
            self._ended_bytes = 0
            self._gone.clear()
        if st.st_size <= self._offset:
            return
        try:
            data = os.pread(self._log_fd, st.st_size - self._offset, self._offset)
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
                gen = self._written_gen = int(line[2:])
                if gen != self.journal_gen:
                    self.journal_gen = gen
                    if self.on_journal_rotated is not None:
                        self.on_journal_rotated()
            elif kind == "F ":
                tid = line[2:]
                records.pop(tid, None)
                if tid in watchers:
                    watched_changed = True
                if raw is not None:
                    raw.pop(tid, None)
                self._forget(tid)
                self._gone.add(tid)
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

    def _new_generation(self, tasks: Any) -> None:
        """Another process compacted the log: what this one read of the old one may be stale (an
        ended task's latest change may now be in the archive only), so it is read again when asked."""
        tasks.raw.clear()
        dirty = tasks.dirty
        for tid in [t for t in tasks.records if t not in dirty]:
            del tasks.records[tid]
        if tasks.watchers:  # a watched task may have changed and moved to the archive: streams look again
            tasks.changed = True

    def check(self, engine: Any) -> None:
        """At start-up: read the whole log, so a corrupt directory is refused before serving (the
        archive's head is checked; its records are read, and checked, when a request asks for one)."""
        with self.locked():
            self.pull(engine)
            self._check_archive()
        if self.corrupt_lines:
            raise SessionError(f"{self._path(LOG)}: corrupt ({self.corrupt_lines} unreadable lines); nothing was changed")
        # The journal's writer opens it by name: it is made here, never through a link, so what it
        # opens is this regular file (the start-up check refused a link or anything else there).
        os.close(self._open(JOURNAL, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK))

    # ------------------------------------------------------------ the archive of ended tasks

    def _check_archive(self) -> None:
        try:
            head = read_file(self._path(ARCHIVE), 64)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise SessionError(f"{self._path(ARCHIVE)}: cannot read: {exc.strerror}") from None
        if _archive_base(head) is None:
            raise SessionError(f"{self._path(ARCHIVE)}: corrupt (no {ARCHIVE_HEAD.strip()!r} head line); nothing was changed")

    def archived(self, task_id: str) -> str | None:
        """The archived record of ``task_id`` as JSON text, or ``None`` (the task table's lookup
        when neither its records nor the log know the id). ``CorruptRecord`` when the archive
        has unreadable lines and the id is not found: it may be among them."""
        if task_id in self._gone:
            return None
        self._index_archive()
        where = self._arch_index.get(task_id)
        if where is None:
            if self._arch_bad:
                raise CorruptRecord(f"not found, and the archive of ended tasks has {self._arch_bad} unreadable lines")
            return None
        assert self._arch_fd is not None
        try:
            return os.pread(self._arch_fd, where[1], where[0]).decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CorruptRecord(f"unreadable in the archive ({exc})") from None

    def archived_ids(self) -> list[str]:
        """The ids the archive of ended tasks holds, oldest first (the control channel's task list)."""
        self._index_archive()
        return [tid for tid in self._arch_index if tid not in self._gone]

    def _index_archive(self) -> None:
        """Bring the index of the archive up to date: from scratch when it is new (or was
        rewritten), else the lines appended since (complete lines only)."""
        try:
            st = os.stat(self._path(ARCHIVE))
        except OSError:
            return  # none yet (or replaced this instant: the next look tells)
        if st.st_ino != self._arch_inode:
            if self._arch_fd is not None:
                os.close(self._arch_fd)
            try:
                self._arch_fd = open_file(self._path(ARCHIVE), os.O_RDONLY | os.O_NONBLOCK)
            except OSError:
                self._arch_fd = None
                return
            self._arch_inode = os.fstat(self._arch_fd).st_ino
            self._arch_offset = 0
            self._arch_index.clear()
            self._arch_bad = 0
        fd = self._arch_fd
        assert fd is not None
        size = os.fstat(fd).st_size
        if size <= self._arch_offset:
            return
        data = os.pread(fd, size - self._arch_offset, self._arch_offset)
        base = self._arch_offset
        end = data.rfind(b"\n") + 1
        pos = 0
        if base == 0 and end:
            pos = data.find(b"\n") + 1
            if _archive_base(data[:pos]) is None:
                self._arch_bad += 1
        self._arch_offset = base + end
        index = self._arch_index
        while pos < end:
            nl = data.index(b"\n", pos)
            kind = data[pos : pos + 2]
            sp = data.find(b" ", pos + 2, nl)
            if (kind == b"T " or kind == b"D ") and sp > 0 and data[sp + 1 : sp + 2] == b"{" and data[nl - 1 : nl] == b"}":
                index[data[pos + 2 : sp].decode("utf-8", "replace")] = (base + sp + 1, nl - sp - 1)
            elif kind == b"F " and sp < 0:
                index.pop(data[pos + 2 : nl].decode("utf-8", "replace"), None)
            else:
                self._arch_bad += 1
            pos = nl + 1

    def _archive(self, lines: list[str]) -> None:
        """Append ``lines`` to the archive (the lock is held), making it if missing, cutting off a
        torn last line first, and rewriting it once it has grown past twice its base."""
        path = self._path(ARCHIVE)
        if not os.path.lexists(path):
            self._write_archive([])
        fd = open_file(path, os.O_RDWR | os.O_APPEND | os.O_NONBLOCK)
        try:
            size = os.fstat(fd).st_size
            keep = _last_newline(fd, size)
            if keep != size:
                os.ftruncate(fd, keep)  # a torn append (its lines are still in the log that was kept)
            _write_all(fd, ("\n".join(lines) + "\n").encode("utf-8"))
            st = os.fstat(fd)
            head = os.pread(fd, 64, 0)
        finally:
            os.close(fd)
        base = _archive_base(head) or 0
        if st.st_size > 2 * base + COMPACT_MIN:
            self._rewrite_archive()

    def _rewrite_archive(self) -> None:
        """The archive with each id's latest line only, at most ``MAX_RECORDS`` (the newest); as
        bytes, so a line it cannot read is kept exactly as it was."""
        data = read_file(self._path(ARCHIVE))
        latest: dict[bytes, bytes] = {}
        unreadable = 0
        for line in data.split(b"\n")[1:-1]:
            kind = line[:2]
            tid = line[2:].partition(b" ")[0]
            if kind == b"F ":
                latest.pop(tid, None)
            elif kind == b"T " or kind == b"D ":
                latest.pop(tid, None)  # (moved to the end: the oldest are forgotten first)
                latest[tid] = line
            else:
                unreadable += 1
                latest[b"\n%d" % unreadable] = line  # (a key no id can be)
        lines = list(latest.values())
        self._write_archive(lines[-MAX_RECORDS:] if len(lines) > MAX_RECORDS else lines)

    def _write_archive(self, lines: list[bytes]) -> None:
        body = b"\n".join(lines) + b"\n" if lines else b""
        head = f"{ARCHIVE_HEAD}{len(body)}\n".encode()
        write_aside(self._path(ARCHIVE), head + body)

    # ------------------------------------------------------------ writing this process's changes

    def push(self, engine: Any) -> None:
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
                self._gone.add(tid)
            tasks.forgotten.clear()
        if self.journal_gen != self._written_gen:
            self._written_gen = self.journal_gen
            line = f"J {self.journal_gen}"
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
        _write_all(fd, data)
        self._offset += len(data)
        st = os.fstat(fd)  # (the lock is held: nobody else wrote since the pull)
        self._seen = (st.st_ino, st.st_size, st.st_mtime_ns)
        if self._offset > COMPACT_MIN and self._offset > 1.5 * (self._live_bytes - self._ended_bytes):
            self._compact()

    def _log(self) -> int:
        if self._log_fd is None:  # (no log yet: this process makes it)
            self._log_fd = self._open(LOG, os.O_RDWR | os.O_APPEND | os.O_CREAT)
            self._inode = os.fstat(self._log_fd).st_ino
        return self._log_fd

    def _compact(self) -> None:
        """The ended tasks' lines (and what was forgotten) to the archive first, then the log
        without them: a crash in between leaves both copies, which agree (the log wins)."""
        ended = [line for line in self._live.values() if line[0] == "D"]
        if ended or self._gone:
            self._archive(ended + [f"F {tid}" for tid in self._gone])
            for line in ended:
                self._forget(line[2:].partition(" ")[0])
            self._gone.clear()
        data = ("\n".join(self._live.values()) + "\n").encode("utf-8") if self._live else b""
        write_aside(self._path(LOG), data)
        if self._log_fd is not None:
            os.close(self._log_fd)
        self._log_fd = self._open(LOG, os.O_RDWR | os.O_APPEND)
        st = os.fstat(self._log_fd)
        self._inode = st.st_ino
        self._offset = len(data)
        self._seen = (st.st_ino, st.st_size, st.st_mtime_ns)

    def keep_journal_bounded(self, expectations: list[Any]) -> None:
        """Rotate the journal once it is past ``JOURNAL_ROTATE`` (the lock is held), and carry the
        verdict on once ``JOURNAL_JUDGE`` bytes of it are not yet judged, so a rotation (which
        saves the verdict first) never reads much at once in the middle of a request."""
        try:
            size = os.stat(self._path(JOURNAL)).st_size
        except OSError:
            return
        from mockmcp.verify.report import carry_on, judged_offset, save_judged

        if size <= JOURNAL_ROTATE and size - judged_offset(self.dir) <= JOURNAL_JUDGE:
            return
        _, state = carry_on(self.dir, expectations)  # the verdict so far (what a dropped file held is in it)
        save_judged(self.dir, state)
        if size <= JOURNAL_ROTATE:
            return
        os.replace(self._path(JOURNAL), self._path(OLDER_JOURNAL))
        self.journal_gen += 1  # (written by the push that follows: every process then reopens)
        if self.on_journal_rotated is not None:
            self.on_journal_rotated()

    def changed_on_disk(self) -> bool:
        """Did another process write the log since this one last read or wrote it? (One ``stat``,
        no lock: the watcher of listen streams asks it every ``WATCH_INTERVAL``.)"""
        try:
            st = os.stat(self._path(LOG))
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


class SessionConnection:
    """A ``Connection`` whose every input chunk (or HTTP message) is handled inside the session's lock.

    It is a ``connection.ShellConnection`` as ``Connection`` is: what it adds is the lock, the
    journal's bound and ``watch``; the observers and ``finished`` are the wrapped connection's.
    """

    def __init__(self, conn: Connection, store: SessionStore) -> None:
        self._conn = conn
        self._store = store
        self.engine = conn.engine
        if self.engine.tasks is not None:
            self.engine.tasks.lookup = store.archived  # (a task the log does not know may be archived)
            self.engine.tasks.archived_ids = store.archived_ids
        self._listening: Any = None  # a trio.Event while ``watch`` waits for a stream to watch tasks
        self._journal: Any = None
        self._expectations: list[Any] = []

    def attach_journal(self, writer: Any, expectations: list[Any]) -> None:
        """The verifier's journal writer: kept bounded (``keep_journal_bounded``), reopened after a rotation."""
        writer.check_every = JOURNAL_CHECK
        self._journal = writer
        self._expectations = expectations
        self._store.on_journal_rotated = self._reopen_journal

    def _reopen_journal(self) -> None:
        """The journal was rotated: the writer writes to the new ``journal.jsonl``, opened here
        without following a link (a link or a FIFO put there meanwhile: journalling stops)."""
        writer = self._journal
        try:
            fd = open_file(self._store.journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK)
        except OSError:
            writer.broken = True
            return
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            writer.broken = True
            return
        with contextlib.suppress(OSError):
            os.close(writer.fd)
        writer.fd = fd

    def _journal_due(self) -> None:
        if self._journal is not None and self._journal.due:
            self._journal.due = False
            self._store.keep_journal_bounded(self._expectations)

    @property
    def observers(self) -> list[InboundObserver]:
        return self._conn.observers

    @property
    def plan_observers(self) -> list[PlanObserver]:
        return self._conn.plan_observers

    def finished(self, request_id: Any) -> None:
        self._conn.finished(request_id)

    def receive_data(self, data: bytes) -> list[Output]:
        with self._store.locked():
            self._store.pull(self.engine)
            self._journal_due()
            out = self._conn.receive_data(data)
            self._store.push(self.engine)
        self._streams_may_watch()
        return out

    def receive_eof(self) -> list[Output]:
        with self._store.locked():
            self._store.pull(self.engine)
            out = self._conn.receive_eof()
            self._store.push(self.engine)
        return out

    def handle_line(
        self, line: bytes | Oversized, check: Callable[[jsonrpc.Message], None] | None = None
    ) -> Output | None:
        """One message (the HTTP shell's way in), under the lock like a chunk of stdin."""
        with self._store.locked():
            self._store.pull(self.engine)
            self._journal_due()
            out = self._conn.handle_line(line, check)
            self._store.push(self.engine)
        self._streams_may_watch()
        return out

    # ------------------------------------------------------------ other processes' changes, pushed

    def _streams_may_watch(self) -> None:
        if self._listening is not None and self.engine.tasks.watchers:
            self._listening.set()

    def refresh(self) -> bool:
        """Read what other processes appended, if anything (the lock taken only then); read?"""
        if not self._store.changed_on_disk():
            return False
        with self._store.locked():
            self._store.pull(self.engine)
            self._store.push(self.engine)
        return True

    async def watch(self, wake: Callable[[], None], interval: float = WATCH_INTERVAL) -> None:
        """While a listen stream here watches tasks: notice the other processes' changes.

        Without this a change made by another process reached this one's
        streams only when this process next read a request. Every ``interval``
        the log is ``stat``-ed (no lock); when another process wrote it, its
        new lines are read under the lock and ``wake`` wakes the streams
        (``pull`` marks the task table changed when a watched task changed;
        each stream then sends ``notifications/tasks``). With no stream
        watching tasks the loop sleeps on an event: nothing is polled, and a
        spawn costs what it did.
        """
        import trio

        tasks = self.engine.tasks
        while True:
            if not tasks.watchers:
                self._listening = trio.Event()
                await self._listening.wait()
                continue
            await trio.sleep(interval)
            if tasks.watchers and (self.refresh() or tasks.changed):  # (changed: read by a synced control op)
                wake()

    @contextlib.contextmanager
    def synced(self) -> Iterator[None]:
        """Work on the engine from outside an input chunk (a control operation) the same way: inside
        the lock, after reading what other processes appended, appending what changed."""
        with self._store.locked():
            self._store.pull(self.engine)
            yield
            self._store.push(self.engine)


def open_file(path: str, flags: int, mode: int = 0o644) -> int:
    """``os.open`` of a session file: never through a symbolic link (``ELOOP``), never inherited."""
    return os.open(path, flags | _FLAGS, mode)


def read_file(path: str, limit: int = -1) -> bytes:
    """A session file's bytes (at most ``limit``), never through a link; a FIFO, a folder or any
    other file that is not a regular one is an ``OSError`` and is never waited on."""
    fd = open_file(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, f"is {file_kind(mode)}, not a regular file")
        chunks = []
        left = limit
        while left:
            chunk = os.read(fd, 1 << 20 if left < 0 else min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk) if left > 0 else 0
        return b"".join(chunks)
    finally:
        os.close(fd)


def write_aside(path: str, data: bytes) -> None:
    """Replace ``path`` whole: written to a new file beside it (``O_EXCL``: never an existing file,
    never through a link), then renamed over it."""
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)  # (left by a process of the same pid that died)
    fd = open_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)
    os.replace(tmp, path)




def _write_all(fd: int, data: bytes) -> None:
    written = 0
    while written < len(data):
        written += os.write(fd, data[written:])


def _archive_base(head: bytes) -> int | None:
    """The archive's BASE from its head line, or ``None`` when the head is not one."""
    first, nl, _ = head.partition(b"\n")
    prefix = ARCHIVE_HEAD.encode()
    if not nl or not first.startswith(prefix) or not first[len(prefix):].isdigit():
        return None
    return int(first[len(prefix):])


def _last_newline(fd: int, size: int) -> int:
    """The offset just past the file's last newline (its size when it ends with one)."""
    pos = size
    while pos > 0:
        start = max(0, pos - 65536)
        chunk = os.pread(fd, pos - start, start)
        nl = chunk.rfind(b"\n")
        if nl >= 0:
            return start + nl + 1
        pos = start
    return 0


def _made_by_us(name: str) -> bool:
    """Is this a file a process making a session writes before ``VERSION`` (so: one being made)?"""
    return name in (LOCK, META) or (name.startswith(".") and name.endswith(".tmp"))


def scenario_ref(scenario: str) -> str:
    """How session.json names the scenario: a file's absolute path, or the bundled name."""
    return os.path.abspath(scenario) if os.path.isfile(scenario) else scenario


__all__ = ["JOURNAL", "SessionConnection", "SessionError", "SessionStore", "scenario_ref"]
