"""The connection of a process on a session directory: every input chunk handled inside the session's lock.

It wraps the plain ``core.connection.Connection``: read what other processes
appended to the state log, handle, append this process's changes, unlock. It
also keeps the journal bounded (the verifier's writer is attached to it) and,
while a listen stream watches tasks, looks at the log's ``stat`` every
``WATCH_INTERVAL``; when another process wrote it, the new lines are read under
the lock at once (``watch``), so the stream hears of the change without
waiting for this process's next request.
"""

from __future__ import annotations

import contextlib
import os
import stat
from typing import TYPE_CHECKING, Callable, Iterator, Protocol

from mockmcp.sessiondir.files import open_file
from mockmcp.sessiondir.store import SessionStore

if TYPE_CHECKING:
    import trio

    from mockmcp.core.actions import Output
    from mockmcp.core.connection import Connection, InboundObserver, PlanObserver
    from mockmcp.scenario.model.options import Expectation
    from mockmcp.wire import jsonrpc
    from mockmcp.wire.framing import Oversized

JOURNAL_CHECK = 1 << 20  # bytes a process writes to the journal between two looks at its size
# How often a process with a listen stream watching tasks looks (one stat) for other processes' changes.
WATCH_INTERVAL = 0.05


class JournalFile(Protocol):
    """The verifier's journal writer, as the session sees it (``verify.journal.JournalWriter``)."""

    fd: int
    broken: bool  # journalling stopped
    check_every: int | None  # bytes between two ``due``s
    due: bool  # set every ``check_every`` bytes written: time to look at the journal's size


class SessionConnection:
    """A ``Connection`` whose every input chunk (or HTTP message) is handled inside the session's lock.

    It is a ``connection.ShellConnection`` as ``Connection`` is: what it adds is the lock, the
    journal's bound and ``watch``; the observers and ``finished`` are the wrapped connection's.
    """

    def __init__(self, conn: Connection, store: SessionStore) -> None:
        self._conn = conn
        self._store = store
        self.engine = conn.engine
        self._listening: trio.Event | None = None  # while ``watch`` waits for a stream to watch tasks
        self._journal: JournalFile | None = None
        self._expectations: list[Expectation] = []

    def attach_journal(self, writer: JournalFile, expectations: list[Expectation]) -> None:
        """The verifier's journal writer: kept bounded (``keep_journal_bounded``), reopened after a rotation."""
        writer.check_every = JOURNAL_CHECK
        self._journal = writer
        self._expectations = expectations
        self._store.rotation.on_rotated(self._reopen_journal)

    def _reopen_journal(self) -> None:
        """The journal was rotated: the writer writes to the new ``journal.jsonl``, opened here
        without following a link (a link or a FIFO put there meanwhile: journalling stops)."""
        writer = self._journal
        if writer is None:
            return
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

    def finished(self, request_id: object) -> None:
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


__all__ = ["JOURNAL_CHECK", "JournalFile", "SessionConnection", "WATCH_INTERVAL"]
