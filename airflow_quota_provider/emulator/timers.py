"""Things due at a moment of emulated time: a training phase ending, a job entering its queue.

The emulator is lazy: nothing runs between requests. Before and after each
request it fires every timer that has come due, in time order and at its own
timestamp, so the state a client sees is what a continuously running
service would show, whenever it looks.

A timer is data, not a closure: a :class:`Timer` names a ``kind`` and its
JSON-plain ``args``, and the module that set it registered what that kind
does (:meth:`Timers.on`). So pending timers can be saved with the rest of
the state (``--state``) and fire after a restart as if nothing happened;
they are also kept in a :class:`~.tables.Table` by sequence, so a save
writes only the timers set or fired since the last.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass

from airflow_quota_provider.emulator.tables import Table

Arg = str | int | float
Action = Callable[..., None]


@dataclass(frozen=True, slots=True)
class Timer:
    kind: str
    args: tuple[Arg, ...] = ()


class Timers:
    """A heap of ``(due, sequence, timer)``; equal due times fire in the order set."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Timer]] = []
        self._next_sequence = 0
        self._actions: dict[str, Action] = {}
        self.pending: Table[tuple[float, Timer]] = Table()
        """``(due, timer)`` of every timer not yet fired, by sequence (as text)."""

    def on(self, kind: str, action: Action) -> None:
        """What a timer of ``kind`` does: ``action(*timer.args)``."""
        self._actions[kind] = action

    def at(self, due: float, timer: Timer, sequence: int | None = None) -> None:
        if sequence is None:
            sequence = self._next_sequence
        self._next_sequence = max(self._next_sequence, sequence + 1)
        heapq.heappush(self._heap, (due, sequence, timer))
        self.pending[str(sequence)] = (due, timer)

    def next_due(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def pop(self) -> tuple[float, Timer]:
        due, sequence, timer = heapq.heappop(self._heap)
        del self.pending[str(sequence)]
        return due, timer

    def fire(self, timer: Timer) -> None:
        self._actions[timer.kind](*timer.args)

    def __len__(self) -> int:
        return len(self._heap)
