"""The official clients' legacy mode over HTTP against sse-retry-legacy (the suite's sse-retry).

The tool's stream ends after a priming event (an event id and ``retry: 500``), before its
answer. mcp==2.3.0 (Python, asyncio) and @modelcontextprotocol/client 2.4.0 both treat the
close as resumable: they wait the ``retry``, GET the endpoint with the id as
``Last-Event-ID`` and read the answer there, so the mock finds nothing (no
``http.resume.missing``, ``http.resume.early`` or ``http.resume.lastEventId``).
"""

from __future__ import annotations

import pytest

from interop import matrix

pytestmark = pytest.mark.interop


@pytest.mark.usefixtures("typescript_client")
def test_both_official_clients_resume_the_closed_stream() -> None:
    results = matrix.run_matrix(["sse-retry-legacy"], ["python-asyncio-http", "typescript-http"], jobs=2)["sse-retry-legacy"]
    for client, cell in results.items():
        assert cell["connect"]["status"] == "ok" and cell["connect"]["protocolVersion"] == "2025-11-25", (client, cell["connect"])
        [call] = [o for o in cell["ops"] if o.get("op") == "callTool"]
        assert call["status"] == "ok" and "Reconnection test completed successfully" in str(call["result"]), (client, call)
        report = cell["report"]
        assert report["findings"] == [] and report["ok"], (client, report["findings"])
