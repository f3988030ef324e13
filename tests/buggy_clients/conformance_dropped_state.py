"""Bug (against scenarios/conformance-request-state.yaml): the retry of confirm drops the requestState."""

from _wire import Wire, call, main, req


def run(w: Wire) -> None:
    w.call(req(0, "server/discover"))
    first = w.call(call(1, "confirm", {"action": "ship"}))
    assert first["result"]["resultType"] == "input_required" and "requestState" in first["result"]
    w.call(call(2, "confirm", {"action": "ship"}, inputResponses={"ok": {"action": "accept", "content": {"ok": True}}}))


main(run)
