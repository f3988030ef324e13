"""``LineSplitter``, the pass-through's framing (``mockmcp proxy`` and ``record``, both ways).

Whatever the chunking, the lines out are the bytes in, cut after each newline; a line longer
than the limit is let through in pieces; a long line costs its length, not its length times
the number of pieces it arrived in.
"""

from __future__ import annotations

import time

from hypothesis import given, strategies as st

from mockmcp.wire.framing import LineSplitter


def split(data: bytes, cuts: list[int], max_line: int) -> list[bytes]:
    splitter = LineSplitter(max_line)
    out: list[bytes] = []
    bounds = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    for a, b in zip(bounds, bounds[1:]):
        out += splitter.feed(data[a:b])
    return out + splitter.close()


lines_of_bytes = st.binary(max_size=300).map(lambda b: b.replace(b"\x00", b"\n"))  # newlines are common
cut_points = st.lists(st.integers(min_value=0, max_value=300), max_size=12)


@given(data=lines_of_bytes, cuts=cut_points)
def test_any_chunking_gives_the_lines_of_the_whole(data: bytes, cuts: list[int]) -> None:
    *lines, tail = data.split(b"\n")
    assert split(data, cuts, 1 << 20) == [x + b"\n" for x in lines] + ([tail] if tail else [])


@given(data=lines_of_bytes, cuts=cut_points, max_line=st.integers(1, 40))
def test_a_line_over_the_limit_passes_in_pieces_and_nothing_is_lost(data: bytes, cuts: list[int],
                                                                     max_line: int) -> None:
    out = split(data, cuts, max_line)
    assert b"".join(out) == data
    assert all(piece.endswith(b"\n") or len(piece) > max_line for piece in out[:-1])
    assert all(piece for piece in out)


def test_a_long_line_in_small_pieces_costs_its_length_once() -> None:
    data = b"x" * (12 << 20) + b"\n"
    splitter = LineSplitter()
    start = time.process_time()
    out: list[bytes] = []
    for i in range(0, len(data), 4096):
        out += splitter.feed(data[i:i + 4096])
    took = time.process_time() - start
    assert out == [data]
    assert took < 0.5, took  # joined again at every piece, it took seconds
