"""Progress on a terminal: a line that rewrites itself, and a bar for long replays."""

from __future__ import annotations

import shutil
import sys
import time
from types import TracebackType
from typing import TextIO

SHOW_AFTER_SECONDS = 2.0
"""Replays shorter than this print nothing."""
_REDRAW_SECONDS = 0.2
_WIDTH = 30


class StatusLine:
    """One line on ``stream`` if it is a terminal, rewritten by each :meth:`show` (cut
    to the terminal's width, so it never wraps) and cleared at the end; nothing at all
    on a file or a pipe."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty()
        self.started = time.monotonic()
        self.drawn = False

    def show(self, text: str) -> None:
        if not self.enabled:
            return
        width = shutil.get_terminal_size().columns - 1
        self.stream.write(f"\r\x1b[K{text[:width]}")
        self.stream.flush()
        self.drawn = True

    def __enter__(self) -> StatusLine:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


class ProgressBar(StatusLine):
    """Shows how far the virtual clock is towards ``total`` seconds, on ``stream`` if it
    is a terminal; redraws at most five times a second and clears itself at the end."""

    def __init__(self, label: str, total: float, stream: TextIO | None = None) -> None:
        super().__init__(stream)
        self.label = label
        self.total = total
        self.next_draw = self.started + SHOW_AFTER_SECONDS

    def update(self, virtual_now: float) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now < self.next_draw:
            return
        self.next_draw = now + _REDRAW_SECONDS
        done = 1.0 if self.total <= 0 else min(1.0, virtual_now / self.total)
        filled = round(done * _WIDTH)
        bar = "#" * filled + "-" * (_WIDTH - filled)
        days = virtual_now / 86400
        self.stream.write(
            f"\r{self.label} [{bar}] {done:4.0%} day {days:.1f}, {now - self.started:.0f}s"
        )
        self.stream.flush()
        self.drawn = True

    def __enter__(self) -> ProgressBar:
        return self
