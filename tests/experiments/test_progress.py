"""The progress facility: plain lines off a terminal, nothing when disabled."""

import io

from dponline.experiments.progress import Interrupted, Progress


def test_plain_lines_when_the_stream_is_not_a_terminal():
    out = io.StringIO()
    with Progress(3, stream=out, every=0.0) as bar:
        for _ in range(3):
            bar.update()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[dponline] 1/3 tasks done, ") and "left" in lines[0]
    assert lines[-1].startswith("[dponline] 3/3 tasks done, ") and "left" not in lines[-1]
    assert "\r" not in out.getvalue()


def test_only_the_last_line_within_the_interval_and_nothing_when_disabled():
    out = io.StringIO()
    with Progress(50, stream=out, every=3600.0) as bar:
        for _ in range(50):
            bar.update()
    assert out.getvalue().splitlines() == [out.getvalue().splitlines()[-1]]
    quiet = io.StringIO()
    with Progress(5, stream=quiet, enabled=False) as bar:
        bar.update(5)
    assert quiet.getvalue() == ""


def test_interrupted_says_how_far_it_got():
    exc = Interrupted(4, 10)
    assert (exc.done, exc.total) == (4, 10) and "4 of 10" in str(exc)
