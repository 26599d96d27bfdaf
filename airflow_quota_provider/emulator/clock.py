"""Emulated time: the wall clock at start, then ``time_scale`` emulated seconds per real second.

Every timestamp the emulator returns is in emulated time, and so is the HTTP
``Date`` of every answer (clients that measure ages against it agree with the
timestamps), so a two-hour training run at ``--time-scale 60`` reports two
hours between its start and end although two minutes passed. ``time_scale`` 0 stops time: only
:meth:`EmulatedClock.advance` (``POST /_emulator/clock``) moves it, which makes
tests exact. :meth:`EmulatedClock.set_time_scale` (``POST /_emulator/clock``
with ``time_scale``) changes the pace from now on, so a driver can pause the
account while it waits for a client to act and then let time run again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class EmulatedClock:
    """Seconds since the Unix epoch, in emulated time; never goes backwards."""

    def __init__(
        self,
        time_scale: float = 1.0,
        start: float | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if time_scale < 0:
            raise ValueError(f"time_scale must be >= 0, got {time_scale:g}")
        self.time_scale = time_scale
        self._monotonic = monotonic
        self._origin_real = monotonic()
        self._origin = time.time() if start is None else start
        self._offset = 0.0
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            elapsed = (self._monotonic() - self._origin_real) * self.time_scale
            return self._origin + elapsed + self._offset

    def set_time_scale(self, time_scale: float) -> float:
        """Run at ``time_scale`` from now on (0 pauses); returns the time, which does not jump."""
        if time_scale < 0:
            raise ValueError(f"time_scale must be >= 0, got {time_scale:g}")
        with self._lock:
            real = self._monotonic()
            self._origin += (real - self._origin_real) * self.time_scale
            self._origin_real = real
            self.time_scale = time_scale
        return self.now()

    def advance(self, seconds: float) -> float:
        """Jump ``seconds`` of emulated time ahead; returns the new time."""
        if seconds < 0:
            raise ValueError(f"the clock only moves forward; got {seconds:g} seconds")
        with self._lock:
            self._offset += seconds
        return self.now()


def to_millis(seconds: float) -> int:
    """Batch's timestamps: integer milliseconds since the epoch."""
    return round(seconds * 1000)
