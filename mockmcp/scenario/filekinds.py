"""What a file that is not a regular one is, in the words ``ls`` users know.

The loader's resource files and the session directory's files refuse such a file
the same way. A module of its own, because the session directory needs only this
from the scenario layer, and a warm spawn must not pay for importing the loader.
"""

from __future__ import annotations

import stat


def file_kind(mode: int) -> str:
    """``mode`` (an ``st_mode``) in words: "a folder", "a FIFO", "a socket"..."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "another kind of file"
