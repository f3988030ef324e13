"""The session's journal kept bounded: rotated, with the verdict so far carried on first.

Every ``JOURNAL_CHECK`` bytes a process wrote (``connection.SessionConnection``)
it looks, under the lock, whether ``journal.jsonl`` is past ``JOURNAL_ROTATE``
(or ``JOURNAL_JUDGE`` of it is not yet judged: then the verdict is carried on,
so a rotation reads little). Before a rotation the verdict so far is saved,
then the file is renamed ``journal.1.jsonl`` (the one before is dropped: the
saved verdict has counted it) and the journal's generation goes up; the state
log writes it (a ``J N`` line) and every process that reads it reopens the
journal. The verdict itself is another layer's (``verify.report``): the
rotation is handed one, as a ``VerdictKeeper``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Callable, Mapping, Protocol

from mockmcp.sessiondir.layout import JOURNAL, OLDER_JOURNAL

if TYPE_CHECKING:
    from mockmcp.scenario.model.options import Expectation

JOURNAL_ROTATE = 32 << 20  # bytes of journal.jsonl past which it is rotated (so at most about twice this is kept)
JOURNAL_JUDGE = 4 << 20  # bytes of journal not yet judged past which the verdict is carried on (and saved)


class VerdictKeeper(Protocol):
    """The session's verdict so far, kept in its directory (``judged.json``): what a rotation needs."""

    def judged_offset(self, directory: str) -> int:
        """How far into the current ``journal.jsonl`` the saved verdict has read."""
        ...

    def carry_on(self, directory: str, expectations: list[Expectation]) -> Mapping[str, object]:
        """The verdict carried on over what was journalled since it was saved: the state to save."""
        ...

    def save(self, directory: str, state: Mapping[str, object]) -> None:
        """Save ``state`` (from ``carry_on``; the session's lock is held)."""
        ...


class JournalRotation:
    """When to rotate the session's journal, and which generation of it this process writes."""

    def __init__(self, directory: str, verdict: VerdictKeeper) -> None:
        self.directory = directory
        self._verdict = verdict
        self.generation = 0  # bumped (a ``J`` line in the state log) each time the journal is rotated
        self._listeners: list[Callable[[], None]] = []

    def on_rotated(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` whenever the journal was rotated (here or by another process)."""
        self._listeners.append(listener)

    def keep_bounded(self, expectations: list[Expectation]) -> None:
        """Rotate the journal once it is past ``JOURNAL_ROTATE`` (the lock is held), and carry the
        verdict on once ``JOURNAL_JUDGE`` bytes of it are not yet judged, so a rotation (which
        saves the verdict first) never reads much at once in the middle of a request."""
        journal = os.path.join(self.directory, JOURNAL)
        try:
            size = os.stat(journal).st_size
        except OSError:
            return
        if size <= JOURNAL_ROTATE and size - self._verdict.judged_offset(self.directory) <= JOURNAL_JUDGE:
            return
        state = self._verdict.carry_on(self.directory, expectations)  # (what a dropped file held is in it)
        self._verdict.save(self.directory, state)
        if size <= JOURNAL_ROTATE:
            return
        os.replace(journal, os.path.join(self.directory, OLDER_JOURNAL))
        self._new_generation(self.generation + 1)  # (written by the push that follows: every process then reopens)

    def heard(self, generation: int) -> None:
        """The state log says the journal is at ``generation`` (another process rotated it)."""
        if generation != self.generation:
            self._new_generation(generation)

    def _new_generation(self, generation: int) -> None:
        self.generation = generation
        for listener in self._listeners:
            listener()


__all__ = ["JOURNAL_JUDGE", "JOURNAL_ROTATE", "JournalRotation", "VerdictKeeper"]
