"""The archive of ended tasks (``ended.log``): where compaction moves them out of the state log.

``mockmcp ended 2 BASE`` then ``T``/``D``/``F`` lines, appended only under the
session's lock; a later line for an id wins (and the state log wins over the
archive). It is read only when a request asks for a task the log does not
know: the index of ids to offsets is built then, once, and followed as the
file grows; a record is read with one ``pread`` and parsed by the task table
when asked for. Past twice ``BASE`` (its size when last written whole) plus
``COMPACT_MIN`` it is rewritten with each id's latest line, at most
``MAX_RECORDS`` of them (the oldest ended tasks are forgotten).
"""

from __future__ import annotations

import os

from mockmcp.core.tasks import MAX_RECORDS, CorruptRecord
from mockmcp.sessiondir import layout
from mockmcp.sessiondir.files import cut_torn_tail, open_file, read_file, write_all, write_aside
from mockmcp.sessiondir.layout import ARCHIVE, ARCHIVE_HEAD, SessionError


class Archive:
    """``ended.log`` of one session directory, and this process's index of it."""

    def __init__(self, directory: str) -> None:
        self.path = os.path.join(directory, ARCHIVE)
        self._fd: int | None = None
        self.inode: int | None = None  # of the file the index was built from (None: not read yet)
        self._offset = 0  # how far the index has read
        self._index: dict[str, tuple[int, int]] = {}  # task id -> (offset, length) of its record
        self.bad = 0  # unreadable lines in it

    def check(self) -> None:
        """At start-up: the head line only (records are read, and checked, when one is asked for)."""
        try:
            head = read_file(self.path, 64)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise SessionError(f"{self.path}: cannot read: {exc.strerror}") from None
        if archive_base(head) is None:
            raise SessionError(f"{self.path}: corrupt (no {ARCHIVE_HEAD.strip()!r} head line); nothing was changed")

    def record(self, task_id: str) -> str | None:
        """The archived record of ``task_id`` as JSON text, or ``None``. ``CorruptRecord`` when
        the archive has unreadable lines and the id is not found: it may be among them."""
        self._update_index()
        where = self._index.get(task_id)
        if where is None:
            if self.bad:
                raise CorruptRecord(f"not found, and the archive of ended tasks has {self.bad} unreadable lines")
            return None
        assert self._fd is not None
        try:
            return os.pread(self._fd, where[1], where[0]).decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CorruptRecord(f"unreadable in the archive ({exc})") from None

    def ids(self) -> list[str]:
        """The ids the archive holds, oldest first."""
        self._update_index()
        return list(self._index)

    def _update_index(self) -> None:
        """Bring the index up to date: from scratch when the file is new (or was rewritten),
        else the lines appended since (complete lines only)."""
        try:
            st = os.stat(self.path)
        except OSError:
            return  # none yet (or replaced this instant: the next look tells)
        if st.st_ino != self.inode:
            if self._fd is not None:
                os.close(self._fd)
            try:
                self._fd = open_file(self.path, os.O_RDONLY | os.O_NONBLOCK)
            except OSError:
                self._fd = None
                return
            self.inode = os.fstat(self._fd).st_ino
            self._offset = 0
            self._index.clear()
            self.bad = 0
        fd = self._fd
        assert fd is not None
        size = os.fstat(fd).st_size
        if size <= self._offset:
            return
        data = os.pread(fd, size - self._offset, self._offset)
        base = self._offset
        end = data.rfind(b"\n") + 1
        pos = 0
        if base == 0 and end:
            pos = data.find(b"\n") + 1
            if archive_base(data[:pos]) is None:
                self.bad += 1
        self._offset = base + end
        index = self._index
        while pos < end:
            nl = data.index(b"\n", pos)
            kind = data[pos : pos + 2]
            sp = data.find(b" ", pos + 2, nl)
            if (kind == b"T " or kind == b"D ") and sp > 0 and data[sp + 1 : sp + 2] == b"{" and data[nl - 1 : nl] == b"}":
                index[data[pos + 2 : sp].decode("utf-8", "replace")] = (base + sp + 1, nl - sp - 1)
            elif kind == b"F " and sp < 0:
                index.pop(data[pos + 2 : nl].decode("utf-8", "replace"), None)
            else:
                self.bad += 1
            pos = nl + 1

    def append(self, lines: list[str]) -> None:
        """Append ``lines`` (the lock is held), making the archive if missing, cutting off a torn
        last line first, and rewriting it once it has grown past twice its base."""
        if not os.path.lexists(self.path):
            self._write([])
        fd = open_file(self.path, os.O_RDWR | os.O_APPEND | os.O_NONBLOCK)
        try:
            cut_torn_tail(fd)  # a torn append (its lines are still in the log that was kept)
            write_all(fd, ("\n".join(lines) + "\n").encode("utf-8"))
            st = os.fstat(fd)
            head = os.pread(fd, 64, 0)
        finally:
            os.close(fd)
        base = archive_base(head) or 0
        if st.st_size > 2 * base + layout.COMPACT_MIN:
            self._rewrite()

    def _rewrite(self) -> None:
        """Each id's latest line only, at most ``MAX_RECORDS`` (the newest); as bytes, so a line
        it cannot read is kept exactly as it was."""
        data = read_file(self.path)
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
        self._write(lines[-MAX_RECORDS:] if len(lines) > MAX_RECORDS else lines)

    def _write(self, lines: list[bytes]) -> None:
        body = b"\n".join(lines) + b"\n" if lines else b""
        head = f"{ARCHIVE_HEAD}{len(body)}\n".encode()
        write_aside(self.path, head + body)


def archive_base(head: bytes) -> int | None:
    """The archive's BASE from its head line, or ``None`` when the head is not one."""
    first, nl, _ = head.partition(b"\n")
    prefix = ARCHIVE_HEAD.encode()
    if not nl or not first.startswith(prefix) or not first[len(prefix):].isdigit():
        return None
    return int(first[len(prefix):])


__all__ = ["Archive", "archive_base"]
