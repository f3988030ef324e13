"""Not a bug: the reference behaviour for scenarios/conformance-missing-result-type.yaml.

A result without resultType is treated as complete: its text is used to call publish. It shows the
scenario can pass, so the failing cell of an SDK client is the client's behaviour, not the mock's.
"""

from _wire import Wire, call, main, req


def run(w: Wire) -> None:
    w.call(req(0, "server/discover"))
    summary = w.call(call(1, "summary"))
    result = summary["result"]
    assert "resultType" not in result
    if result.get("resultType", "complete") == "complete":  # absent means complete
        w.call(call(2, "publish", {"text": result["content"][0]["text"]}))


main(run)
