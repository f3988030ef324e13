"""Bug: the retry sends back a modified requestState (here: one character changed)."""

from _wire import ANSWER, Wire, call, main


def run(w: Wire) -> None:
    state = w.call(call(1, "greet"))["result"]["requestState"]
    tampered = state[:-1] + ("A" if state[-1] != "A" else "B")
    w.call(call(2, "greet", inputResponses=ANSWER, requestState=tampered))


main(run)
