"""Bug (against scenarios/conformance-no-leak.yaml): the answers for greet are also sent on a parallel echo."""

from _wire import ANSWER, Wire, call, main, req


def run(w: Wire) -> None:
    w.call(req(0, "server/discover"))
    first = w.call(call(1, "greet"))
    assert first["result"]["resultType"] == "input_required"
    w.call(call(2, "echo", {"text": "in parallel"}, inputResponses=ANSWER))  # the leak
    w.call(call(3, "greet", inputResponses=ANSWER, requestState=first["result"]["requestState"]))


main(run)
