"""The safe file helpers every file of a session directory goes through.

A session directory is shared with other processes and may hold anything a
user (or an attacker) puts there, so its files are opened without following
a symbolic link (``O_NOFOLLOW``; files written aside are made with
``O_EXCL``), never inherited by a child, and a FIFO, a folder or anything else
that is not a regular file is an ``OSError``, never waited on. A file replaced
whole is written aside and renamed over it, so a reader sees the old file or
the new one. The verdict (``verify.report``) reads and writes its files
through these too.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat

from mockmcp.scenario.filekinds import file_kind

_FLAGS = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


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
        try:
            write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)  # (a full disk: no half-written file is left beside it)
        raise


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` (``os.write`` may write part of it)."""
    written = 0
    while written < len(data):
        written += os.write(fd, data[written:])


def cut_torn_tail(fd: int) -> int:
    """Before appending to a file of lines: cut off a torn last line (a writer killed, or stopped by
    a full disk or a file size limit, in the middle of one), so what is appended is never glued onto
    it; the file's size after. Only for a file appended under the session's lock."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return size  # (the usual case, in one byte: no chunk of the tail read per append)
    keep = last_newline(fd, size)
    if keep != size:
        os.ftruncate(fd, keep)
    return keep


def last_newline(fd: int, size: int) -> int:
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


__all__ = ["cut_torn_tail", "last_newline", "open_file", "read_file", "write_all", "write_aside"]
