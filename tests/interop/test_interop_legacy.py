"""Both official clients in their legacy mode against everything-legacy.

mcp==2.3.0 (Python, asyncio) and @modelcontextprotocol/client 2.4.0 fall back to
the 2025-11-25 handshake (the scenario answers server/discover with -32601), then
the matrix's generic session calls every tool: the server's own requests
(sampling, elicitation in form and url mode, roots) reach the clients' callbacks,
their answers come back in the tool results, and the mock finds nothing wrong
with how they answered.
"""

from __future__ import annotations

import pytest

from interop import matrix

pytestmark = pytest.mark.interop


@pytest.mark.usefixtures("typescript_client")
def test_server_to_client_requests_with_both_official_clients_in_legacy_mode() -> None:
    results = matrix.run_matrix(["everything-legacy"], ["python-asyncio", "typescript"], jobs=2)["everything-legacy"]
    for client, cell in results.items():
        assert cell["connect"]["status"] == "ok" and cell["connect"]["protocolVersion"] == "2025-11-25", (client, cell["connect"])
        assert cell["callbacks"]["sampling"] == [1] and cell["callbacks"]["roots"] == [1], (client, cell["callbacks"])
        assert sorted(cell["callbacks"]["elicitation"]) == ["form", "url"], (client, cell["callbacks"])
        calls = {o["name"]: o for o in cell["ops"] if o.get("op") == "callTool"}
        assert all(o["status"] == "ok" for o in calls.values()), (client, [o for o in calls.values() if o["status"] != "ok"])
        texts = {name: str(o.get("result")) for name, o in calls.items()}
        assert "LLM sampling result: " in texts["trigger-sampling-request"] and "mock-model" in texts["trigger-sampling-request"]
        assert "Current MCP Roots: [" in texts["get-roots-list"] and "file:///project" in texts["get-roots-list"]
        assert '"action":"accept"' in texts["trigger-elicitation-request"]
        assert "URL elicitation: " in texts["trigger-url-elicitation"]
        report = cell["report"]
        assert report["counts"]["clientResponses"] == 4 and report["findings"] == [], (client, report["findings"])
