"""The session's lock: every input chunk of every process is handled holding it.

``fcntl.flock`` on the directory's ``lock`` file, exclusive: read the log's
new lines, handle, append the changes, unlock; so no update is lost whatever
the number of processes. The file is held open for the process's life.
"""

from __future__ import annotations

import contextlib
import fcntl
from typing import Iterator


class SessionLock:
    """An open ``lock`` file (made by ``layout.open_directory``); ``locked()`` holds it."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self.fd, fcntl.LOCK_UN)


__all__ = ["SessionLock"]
