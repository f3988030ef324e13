"""Human-readable logs on stderr (never stdout, which carries only protocol messages)."""

from __future__ import annotations

import os
from typing import Any, Callable

LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "quiet": 100}


class StderrLog:
    """Human-readable logs on stderr (never stdout)."""

    def __init__(self, level: str = "info", write: Callable[[bytes], Any] | None = None) -> None:
        self.level = LEVELS[level]
        self._write = write or (lambda b: os.write(2, b))

    def __call__(self, level: str, text: str) -> None:
        if LEVELS[level] >= self.level:
            self.raw(f"mockmcp: {level}: {text}\n")

    def raw(self, text: str) -> None:
        try:
            self._write(text.encode("utf-8", "replace"))
        except OSError:
            pass  # stderr closed: logs are best effort, the protocol is not
