"""The task records a table holds: in memory, as text another process wrote, or in an archive.

With a session directory, the session store reads the other processes' records as JSON text
(``raw``: parsed when first looked at, so a session of 10,000 ended tasks starts without
parsing them), finds ended tasks it archived through ``lookup``, and writes what changed here
(``take_dirty``) and what was forgotten past ``MAX_RECORDS``. Without one, the records live as
long as the process. The core never touches a file. Sans-I/O.
"""

from __future__ import annotations

from typing import Any, Callable

from mockmcp.wire import errors
from mockmcp.core.tasks.record import MAX_RECORDS, TERMINAL, CorruptRecord, TaskRecord

Lookup = Callable[[str], "str | None"]  # a task id -> its record's JSON text, or None


class TaskRecords:
    """The records of one session's tasks, by id, and which changed since the store last took them.

    ``spec_count`` says how many task scripts there are (a record naming another does not fit);
    ``parsed`` is told of each id whose record was read from text (it was written elsewhere).
    """

    def __init__(
        self,
        spec_count: Callable[[], int],
        parsed: Callable[[str], None],
        lookup: Lookup | None = None,
        archived_ids: Callable[[], list[str]] | None = None,
    ) -> None:
        self.spec_count = spec_count
        self.parsed = parsed
        self.records: dict[str, TaskRecord] = {}
        # Records another process wrote, as the JSON text the session store read.
        self.raw: dict[str, str] = {}
        # Where a record neither kept nor read as text is looked for last (the session store's
        # archive of ended tasks, read only when asked), and what it can find.
        self.lookup = lookup
        self.archived_ids = archived_ids
        self.dirty: dict[str, None] = {}  # ids changed since the store last took them
        self.forgotten: dict[str, None] = {}  # ids pruned (the store compacts them away)

    def add(self, rec: TaskRecord) -> None:
        """A new task: kept, the oldest ended ones past the bound forgotten."""
        self.records[rec.id] = rec
        self._prune()
        self.saved(rec)

    def get(self, task_id: str) -> TaskRecord | None:
        """The record of ``task_id`` (parsed now if the store read it as text).

        A stored record that does not fit raises ``CorruptRecord`` and stays as
        it was (start-up does not parse records: a session of 10,000 ended
        tasks would pay for it at every spawn)."""
        rec = self.records.get(task_id)
        if rec is None:
            text = self.raw.get(task_id)
            if text is None and self.lookup is not None:
                text = self.lookup(task_id)
            if text is not None:
                rec = self.records[task_id] = TaskRecord.from_text(text, task_id, self.spec_count())
                self.raw.pop(task_id, None)
                self.parsed(task_id)
        return rec

    def stored(self, task_id: str, request_id: Any) -> TaskRecord | None:
        """``get``, a corrupt stored record answered as the internal error it is (and left as it is):
        what both ``tasks/*`` and the control channel's task operations look a task up with."""
        try:
            return self.get(task_id)
        except CorruptRecord as exc:
            raise errors.ClientError(
                f"Internal error: the session directory's record of task {task_id} is corrupt ({exc}); it was left as it is",
                data={"taskId": task_id},
                request_id=request_id,
            ) from None

    def peek(self, task_id: str) -> TaskRecord | None:
        """``get``, with a corrupt record taken as absent (streams and pruning skip it; a request for
        the task itself gets the error)."""
        try:
            return self.get(task_id)
        except CorruptRecord:
            return None

    def known_ids(self) -> list[str]:
        """Every task id this table can answer for, oldest first: the archived ones (a session's
        ended tasks, read only when asked for), then those in memory and in the log."""
        here = [*self.records, *self.raw]
        if self.archived_ids is None:
            return here
        present = set(here)
        return [tid for tid in self.archived_ids() if tid not in present] + here

    def load(self, task_id: str, text: str) -> None:
        """The store read a newer version of a record (another process changed it)."""
        self.records.pop(task_id, None)
        self.raw[task_id] = text

    def saved(self, rec: TaskRecord) -> None:
        """``rec`` changed: the store writes it next."""
        self.dirty[rec.id] = None

    def take_dirty(self) -> list[TaskRecord]:
        """The records changed since the last call (the session store writes them)."""
        out = [self.records[t] for t in self.dirty if t in self.records]
        self.dirty.clear()
        return out

    def _prune(self) -> None:
        """Forget the oldest ended tasks past ``MAX_RECORDS`` (memory, and a session's store, stay bounded)."""
        excess = len(self.records) + len(self.raw) - MAX_RECORDS
        if excess <= 0:
            return
        for tid in list(self.raw):  # rare: past the bound, what other processes wrote is read too
            self.peek(tid)  # (a corrupt record stays text, and is never pruned)
        for tid in [t for t, r in self.records.items() if r.status in TERMINAL][:excess]:
            del self.records[tid]
            self.dirty.pop(tid, None)
            self.forgotten[tid] = None
