"""A session directory's store: what one process keeps of the session (``--session DIR``).

A client may kill and restart the mock, or spawn it twice (the TypeScript
client's discover probe), or run several at once; with the same ``DIR`` they
all share the tasks, the named state, the rule counters and the journal. The
directory's format is ``layout``'s; this store puts together what a process
holds of it: the lock (``lock``), the state log (``statelog``), the archive of
ended tasks (``archive``) and the journal's rotation (``rotation``), whose
verdict is handed in (``verify.report`` keeps it: this layer is below it).
The connection that handles every input chunk inside the lock is
``connection.SessionConnection``.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Callable, Iterator

from mockmcp.sessiondir.archive import Archive
from mockmcp.sessiondir.layout import JOURNAL, LOG, SessionError, open_directory, open_named
from mockmcp.sessiondir.rotation import JournalRotation, VerdictKeeper
from mockmcp.sessiondir.statelog import StateLog

if TYPE_CHECKING:
    from mockmcp.core.engine import Engine
    from mockmcp.scenario.model.options import Expectation


class SessionStore:
    """One process's hold on a session directory, checked and opened at construction."""

    def __init__(self, path: str, scenario: str, verdict: VerdictKeeper, warn: Callable[[str], None] | None = None) -> None:
        self.dir = path
        self.scenario = scenario
        self._lock = open_directory(path, scenario)
        self.archive = Archive(path)
        self.rotation = JournalRotation(path, verdict)
        self.log = StateLog(path, self.archive, self.rotation, warn)  # (warn: a problem it serves on after)

    @property
    def journal(self) -> str:
        return os.path.join(self.dir, JOURNAL)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        with self._lock.locked():
            yield

    def check(self, engine: Engine) -> None:
        """At start-up: read the whole log, so a corrupt directory is refused before serving (the
        archive's head is checked; its records are read, and checked, when a request asks for one)."""
        with self.locked():
            self.log.pull(engine)
            self.archive.check()
        if self.log.corrupt_lines:
            raise SessionError(
                f"{os.path.join(self.dir, LOG)}: corrupt ({self.log.corrupt_lines} unreadable lines); nothing was changed"
            )
        # The journal's writer opens it by name: it is made here, never through a link, so what it
        # opens is this regular file (the start-up check refused a link or anything else there).
        os.close(open_named(self.dir, JOURNAL, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK))

    def pull(self, engine: Engine) -> None:
        """Apply what other processes appended to the log since this one last read (the lock is held)."""
        self.log.pull(engine)

    def push(self, engine: Engine) -> None:
        """Append what changed here since the last push (the lock is held, the log read to its end)."""
        self.log.push(engine)

    def changed_on_disk(self) -> bool:
        """Did another process write the log since this one last read or wrote it? (One ``stat``, no lock.)"""
        return self.log.changed_on_disk()

    def archived(self, task_id: str) -> str | None:
        """The archived record of ``task_id`` as JSON text, or ``None`` (the task table's lookup
        when neither its records nor the log know the id). ``CorruptRecord`` when the archive
        has unreadable lines and the id is not found: it may be among them."""
        if task_id in self.log.gone:
            return None
        return self.archive.record(task_id)

    def archived_ids(self) -> list[str]:
        """The ids the archive of ended tasks holds, oldest first (the control channel's task list)."""
        gone = self.log.gone
        return [tid for tid in self.archive.ids() if tid not in gone]

    def keep_journal_bounded(self, expectations: list[Expectation]) -> None:
        """Rotate the journal when it is due (the lock is held): ``rotation.JournalRotation.keep_bounded``.
        A verdict that cannot be saved (a full disk) leaves the journal as it is, growing: said, and
        tried again at the next look (the request being handled is answered either way)."""
        try:
            self.rotation.keep_bounded(expectations)
        except OSError as exc:
            self.log.warn(f"{self.journal}: cannot save the verdict so far and rotate the journal: {exc.strerror}; "
                          "it grows until this works again (free some space)")


__all__ = ["SessionStore"]
