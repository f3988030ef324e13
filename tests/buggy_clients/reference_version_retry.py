"""Not a bug: the reference behaviour for scenarios/conformance-version-retry.yaml.

On -32022 to a request the client picks a version from data.supported and retries that request
(with a new id). It shows the scenario can pass.
"""

from _wire import Wire, call, main, req


def run(w: Wire) -> None:
    w.call(req(0, "server/discover"))
    first = w.call(call(1, "echo", {"text": "hi"}))
    assert first["error"]["code"] == -32022
    retry = call(2, "echo", {"text": "hi"})
    retry["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = first["error"]["data"]["supported"][0]
    assert w.call(retry)["result"]["content"][0]["text"] == "hi"


main(run)
