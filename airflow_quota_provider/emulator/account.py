"""What one emulated account holds, and the time it is there.

``account.now`` is the emulated time of whatever is happening: the moment a
timer fires while catching up, or the clock's time while a request is
handled. Every timestamp a record gets is read from it.

The parts that move the account (the training runtime :mod:`.training`, the
attempts :mod:`.attempts`, the dispatcher :mod:`.dispatch`) work on an
:class:`Account`; :class:`~.world.World` is the account with those parts joined
to it, which the operations are given.
"""

from __future__ import annotations

from collections.abc import Mapping

from airflow_quota_provider.emulator.arns import Arns
from airflow_quota_provider.emulator.clock import EmulatedClock, to_millis
from airflow_quota_provider.emulator.faults import Faults
from airflow_quota_provider.emulator.store import Store
from airflow_quota_provider.emulator.timers import Timer, Timers


class Account:
    def __init__(
        self,
        clock: EmulatedClock,
        arns: Arns,
        instance_limits: Mapping[str, int] | None = None,
        faults: Faults | None = None,
    ) -> None:
        self.clock = clock
        self.arns = arns
        self.instance_limits = dict(instance_limits or {})
        self.faults = faults or Faults()
        self.store = Store()
        self.timers = Timers()
        self.now = clock.now()

    @property
    def now_ms(self) -> int:
        return to_millis(self.now)

    def at(self, due: float, timer: Timer) -> None:
        """Fire ``timer`` at emulated time ``due`` (at once on the next catch-up if past)."""
        self.timers.at(due, timer)

    def after(self, seconds: float, timer: Timer) -> None:
        self.timers.at(self.now + seconds, timer)
