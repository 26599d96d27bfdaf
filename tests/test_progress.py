"""Progress on a terminal: the replay bar and the status line, drawn only on a terminal
and cleared at the end."""

from __future__ import annotations

import io

from airflow_quota_provider.cli.progress import ProgressBar, StatusLine


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_long_run_on_a_terminal_draws_the_bar_and_clears_it() -> None:
    stream = Terminal()
    with ProgressBar("aws at load 1", 86400 * 10, stream) as bar:
        bar.update(86400)  # too early: nothing drawn yet
        assert stream.getvalue() == ""
        bar.next_draw = 0.0  # as if the run had gone on for a while
        bar.update(86400 * 5)
    text = stream.getvalue()
    assert text.startswith("\raws at load 1 [" + "#" * 15 + "-" * 15 + "]  50% day 5.0, ")
    assert text.endswith("\r\x1b[K")


def test_nothing_is_written_when_not_on_a_terminal() -> None:
    stream = io.StringIO()
    with ProgressBar("static at load 1", 100, stream) as bar:
        bar.next_draw = 0.0
        bar.update(50)
    assert stream.getvalue() == ""


def test_a_status_line_rewrites_itself_on_a_terminal_and_clears_at_the_end() -> None:
    stream = Terminal()
    with StatusLine(stream) as line:
        line.show("replay 1/16")
        line.show("replay 2/16")
    assert stream.getvalue() == "\r\x1b[Kreplay 1/16\r\x1b[Kreplay 2/16\r\x1b[K"
    quiet = io.StringIO()
    with StatusLine(quiet) as line:
        line.show("replay 1/16")
    assert quiet.getvalue() == ""
