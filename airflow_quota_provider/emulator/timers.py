"""Things due at a moment of emulated time: a training phase ending, a job entering its queue.

The emulator is lazy: nothing runs between requests. Before and after each
request it fires every timer that has come due, in time order and at its own
timestamp, so the state a client sees is what a continuously running
service would show, whenever it looks.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

Action = Callable[[], None]


class Timers:
    """A heap of ``(due, sequence, action)``; equal due times fire in the order set."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Action]] = []
        self._sequence = itertools.count()

    def at(self, due: float, action: Action) -> None:
        heapq.heappush(self._heap, (due, next(self._sequence), action))

    def next_due(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def pop(self) -> tuple[float, Action]:
        due, _, action = heapq.heappop(self._heap)
        return due, action

    def __len__(self) -> int:
        return len(self._heap)
