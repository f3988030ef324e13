"""One warm server per test module, in a runtime folder of its own (never the user's)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.process import WarmServer, running_warm_server


@pytest.fixture(scope="module")
def warm() -> Iterator[WarmServer]:
    with running_warm_server() as server:
        yield server
