"""Bug: inputResponses meant for one call are sent on a parallel call to another tool."""

from _wire import ANSWER, Wire, call, main


def run(w: Wire) -> None:
    state = w.call(call(1, "greet"))["result"]["requestState"]
    w.call(call(2, "echo", {"text": "hi"}, inputResponses=ANSWER))  # the leak
    w.call(call(3, "greet", inputResponses=ANSWER, requestState=state))  # the real retry: fine


main(run)
