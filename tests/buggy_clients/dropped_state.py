"""Bug: the retry after input_required omits the requestState the server gave."""

from _wire import ANSWER, Wire, call, main


def run(w: Wire) -> None:
    first = w.call(call(1, "greet"))
    assert first["result"]["resultType"] == "input_required" and "requestState" in first["result"]
    w.call(call(2, "greet", inputResponses=ANSWER))  # no requestState


main(run)
