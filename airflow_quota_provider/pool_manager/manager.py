"""The pool manager's loop: read Airflow, decide, apply in a safe order, sleep, repeat.

Each cycle:

1. reads the task instances of the managed pools and the pools (a few calls);
2. decides from the core's state kept between cycles
   (:class:`~airflow_quota_provider.airflow_pools.standing.Standing`), which takes what
   changed since the last read: built afresh when the manager starts, takes the lease
   over or runs a new config, and rebuilt every ``heal_every`` seconds (any difference
   is logged and counted; there should be none);
3. applies, in this order, so no GPU is ever promised twice:
   a. pools that shrink (or are missing, or were edited by hand) are set first;
   b. victims are cleared (or failed once their preemptions are used up), each
      with a note saying who preempted it and why; Airflow kills them;
   c. tasks that could never fit are failed with a note;
   d. pools that grow are set last. A preemptor's pool grows only in a later
      cycle, once its victims' processes are gone (they show ``restarting``
      until then), because a cleared task stops counting against its pool at
      once while its process may live ~10 s more;
   e. a task ``restarting`` for long after it was cleared is cleared again (see
      :mod:`~airflow_quota_provider.airflow_pools.restarting`).

After each cycle it sends the fleet's gauges (per share and unit: used, borrowed,
lent, waiting) and counts preemptions and failures per share, through Airflow's
``Stats`` (see :mod:`airflow_quota_provider.metrics`).

When Airflow cannot be reached or answers errors, the cycle stops where it is
(nothing half-decided is applied), no pool grows while the manager cannot see,
and it retries with a growing delay, saying so.

When Airflow refuses a change (a clear, a fail or a pool answered with a 4xx), asking
again would get the same answer: the manager logs an error naming the call and
Airflow's answer, sets back the pools that cycle had shrunk (so no pool stays shut
for a preemption that cannot happen), counts it (``refusals``), and keeps it in its
database, where ``status``, ``explain`` and the page show it until a cycle applies
all its decisions again.

With a :class:`~airflow_quota_provider.pool_manager.lease.Lease`, several managers
run for one fleet and only the lease's holder cycles; it checks the lease before
each change it makes and stops where it is once it can no longer be sure it leads.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from airflow_quota_provider import metrics
from airflow_quota_provider.airflow_pools.decide import PoolPlan, Stop
from airflow_quota_provider.airflow_pools.external import (
    TRIGGER_ON_KILL,
    ExternalWork,
    ExternalWorkUnknown,
    Victim,
)
from airflow_quota_provider.airflow_pools.figures import fleet_gauges
from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.gateway import AirflowGateway, GatewayError
from airflow_quota_provider.airflow_pools.heartbeat import (
    AnotherLeader,
    Heartbeat,
    HeartbeatBoard,
)
from airflow_quota_provider.airflow_pools.observe import Observed, observe
from airflow_quota_provider.airflow_pools.overtaking import Overtaking
from airflow_quota_provider.airflow_pools.pools import PoolSlots
from airflow_quota_provider.airflow_pools.recording import CycleRecording
from airflow_quota_provider.airflow_pools.restarting import RestartingWatch
from airflow_quota_provider.airflow_pools.standing import Standing
from airflow_quota_provider.airflow_pools.store import Store
from airflow_quota_provider.airflow_pools.task_mirror import TaskMirror
from airflow_quota_provider.airflow_pools.tasks import PoolTask, TaskState
from airflow_quota_provider.airflow_pools.unanswered import Unanswered, carried_out
from airflow_quota_provider.core.task_key import TaskKey
from airflow_quota_provider.pool_manager.config_watch import ConfigRefused, ConfigWatch
from airflow_quota_provider.pool_manager.lease import Lease
from airflow_quota_provider.reconciler.reconciler import Reconciler
from airflow_quota_provider.reconciler.sources import JobsUnknown

log = logging.getLogger(__name__)

MAX_BACKOFF_SECONDS = 60.0
HEAL_SECONDS = 300.0
"""How often the state kept between cycles is rebuilt from a full read to heal."""


class LeaseLost(RuntimeError):
    """The manager can no longer be sure it leads: it must stop changing anything."""


class ForeignPools(RuntimeError):
    """The config names pools that Airflow shows managed for another fleet."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class Refused(RuntimeError):
    """Airflow refused one of the cycle's changes; the cycle's pool changes were undone."""

    def __init__(self, error: GatewayError) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass(frozen=True)
class CycleReport:
    """One cycle: what was decided, and how many REST calls it took."""

    plan: PoolPlan
    calls: int
    pools_changed: int


class PoolManager:
    """Keeps one fleet's pools in line with the core's decisions."""

    def __init__(
        self,
        fleet: Fleet,
        gateway: AirflowGateway,
        store: Store,
        *,
        clock: Callable[[], float] = time.time,
        external: ExternalWork | None = None,
        lease: Lease | None = None,
        reconciler: Reconciler | None = None,
        reconcile_every: float = 60.0,
        watch: ConfigWatch | None = None,
        heartbeat: HeartbeatBoard | None = None,
        me: Heartbeat | None = None,
        heal_every: float = HEAL_SECONDS,
        recording: CycleRecording | None = None,
    ) -> None:
        self.fleet = fleet
        self.gateway = gateway
        self.store = store
        self.clock = clock
        self.external = external
        self.lease = lease
        self.reconciler = reconciler
        self.reconcile_every = reconcile_every
        self._reconciled = float("-inf")
        self.restarting = RestartingWatch()
        self._shrunk: dict[str, PoolSlots] = {}
        """The pools this cycle has shrunk so far, as they were before."""
        self._refused: bool | None = None
        """Whether a refusal is on record (``None``: not known since start)."""
        self.watch = watch
        self.heartbeat = heartbeat
        self.me = me
        """What this manager says of itself in the fleet's heartbeat (with ``heartbeat``)."""
        self.overtaking = Overtaking()
        self.heal_every = heal_every
        self.standing: Standing | None = None
        """The core's state kept between cycles (``None``: built afresh next cycle)."""
        self._healed = float("-inf")
        self.mirror = TaskMirror(gateway, clock=clock)
        """The task instances as last read, brought up to date by reading what changed."""
        self.recording = recording
        """Records the fleet's usage history each cycle (``None``: not recorded)."""
        self._unanswered: dict[TaskKey, Unanswered] = {}
        """The clears and fails sent without an answer, asked after next cycle."""

    def cycle(self) -> CycleReport:
        """One cycle; :class:`Refused` if Airflow refused one of its changes."""
        self._take_config()
        calls = self.gateway.calls
        self._settle_unanswered()
        now = self.clock()
        standing, heal = self._standing()
        differences = standing.differences
        observed = observe(
            self.fleet,
            self.gateway,
            self.store,
            now,
            self.external,
            standing,
            heal=heal,
            mirror=self.mirror,
        )
        if standing.differences > differences:
            metrics.count_heal_differences(
                self.fleet.config.job_queue, standing.differences - differences
            )
        plan = observed.plan
        pools = self.gateway.pools()
        self.mirror.check(pools)
        foreign = self.fleet.foreign_pools(pools)
        if foreign:
            raise ForeignPools(foreign)
        for task in self.overtaking.cycle(observed.read, (start.key for start in plan.start)):
            log.warning(
                "%s started in %s though the manager did not admit it, before a task of its "
                "pool that comes first: Airflow gave it slots freed between two cycles",
                task.key,
                task.pool,
            )
            if task.pool in self.fleet.shares:
                self._count("unadmitted_starts", task.pool)
        self._shrunk = {}
        try:
            changed = self._apply(observed, pools, now)
        except GatewayError as error:
            if not error.refused:
                raise
            self._undo(error, now)
            raise Refused(error) from None
        if self._refused is not False:
            self.store.resolve_refusals(_moment(now))
            self._refused = False
        self.beat(now, "")
        report = CycleReport(plan, self.gateway.calls - calls, changed)
        self.store.record_cycle(plan, report.calls, _moment(now))
        self._record(observed, now)
        metrics.emit(fleet_gauges(self.fleet, observed.tasks, plan))
        return report

    def _record(self, observed: Observed, now: float) -> None:
        """Record the fleet's history as this cycle read it, while this manager leads."""
        if self.recording is None:
            return
        if self.lease is not None and not self.lease.leading():
            self.recording.forget()  # another may record meanwhile
            return
        self.recording.record(self.fleet, observed.tasks, now, self._stopped_at)

    def _stopped_at(self, key: TaskKey) -> int | None:
        last = self.store.last_preemption(key)
        return None if last is None else round(last.at.timestamp() * 1000)

    def _standing(self) -> tuple[Standing, bool]:
        """The kept state, and whether this cycle rebuilds it to heal (a new state, for a
        new manager, lead or config, is built from the first read)."""
        monotonic = time.monotonic()
        if self.standing is None or self.standing.fleet is not self.fleet:
            self.standing = Standing(self.fleet)
            self.mirror.forget()  # built from a full read
            if self.recording is not None:  # goes on from what the database holds
                self.recording.forget()
            self._healed = monotonic
            return self.standing, False
        if monotonic - self._healed < self.heal_every:
            return self.standing, False
        self._healed = monotonic
        return self.standing, True

    def _take_config(self) -> None:
        """Run the config file's new text from this cycle on, if it changed and validates."""
        if self.watch is None:
            return
        before = self.watch.running.digest
        try:
            found = self.watch.poll()
        except ConfigRefused as refused:
            log.error(
                "config %s changed but is refused; still running the config %s: %s",
                self.watch.path,
                before,
                "; ".join(refused.problems),
            )
            return
        if found is not None:
            self.fleet = Fleet.of(found.config)
            log.info(
                "config %s changed (%s -> %s): running it from this cycle",
                self.watch.path,
                before,
                found.digest,
            )

    def beat(self, now: float, error: str) -> None:
        """Write the fleet's heartbeat: this manager, its config, its last error (``""``:
        the cycle ended well). Best effort after a failure: Airflow may be what failed."""
        refused = self.watch.refused if self.watch is not None else None
        metrics.manager_health(
            self.fleet.config.job_queue, cycled=not error, config_refused=refused is not None
        )
        if self.heartbeat is None or self.me is None:
            return
        me = self.me
        if self.watch is not None:
            running = self.watch.running
            me = replace(
                me,
                config_digest=running.digest,
                config_text=running.text,
                config_refused=str(refused) if refused is not None else "",
            )
        if error:
            me = replace(me, error=error, error_at=now)
        else:
            me = replace(me, cycled_at=now, error="", error_at=None)
            if not self._beat_due(now) and replace(me, cycled_at=self.me.cycled_at) == self.me:
                self.me = replace(self.me, cycled_at=now)  # written at its next beat
                return
        self.me = self.heartbeat.write(me)

    def _beat_due(self, now: float) -> bool:
        """Whether the heartbeat is to be written (and read first) this cycle: a cycle that
        changes nothing in it writes it once in its ``beat_every`` seconds (every cycle if
        that is 0 or shorter than the interval)."""
        return self.me is None or now - self.me.written_at >= self.me.beat_every

    def _apply(self, observed: Observed, pools: dict[str, PoolSlots], now: float) -> int:
        """Apply the cycle's plan in the safe order; how many pools changed."""
        plan = observed.plan
        changed = self._set_pools(plan, pools, grow=False)
        deferred = {task.key for task in observed.read if task.state is TaskState.DEFERRED}
        for stop in plan.stop:
            self._preempt(stop, now, deferred=stop.key in deferred)
        for refusal in plan.refuse:
            self._may_change(f"fail {refusal.key}")
            log.warning("failing %s: %s", refusal.key, refusal.note)
            self.gateway.fail(refusal.key, refusal.note)
            self._count("failures", refusal.pool)
        if changed and self._started_unadmitted(observed):
            log.warning("no pool grows this cycle: it decides again with what runs now")
        else:
            changed += self._set_pools(plan, pools, grow=True)
        for task in self.restarting.stuck(observed.read, now):
            self._clear_again(task, now)
        return changed

    def _undo(self, error: GatewayError, now: float) -> None:
        """Airflow refused a change: say so, set back the pools this cycle shrank (their
        victims were not all stopped), and keep the refusal for ``status`` and the page."""
        log.error(
            "Airflow refused to %s (%s); setting back the %d pool(s) this cycle shrank",
            error.what,
            error.detail,
            len(self._shrunk),
        )
        for name, before in self._shrunk.items():
            try:
                self._may_change(f"set pool {name} back to {before.slots} slots")
                self.gateway.set_pool(name, before.slots, self.fleet.description(name))
            except (GatewayError, LeaseLost) as failed:
                log.error("could not set pool %s back to %d slots: %s", name, before.slots, failed)
        self.store.record_refusal(error.what, error.status or 0, error.detail, _moment(now))
        self._refused = True
        metrics.count_refusal(self.fleet.config.job_queue)

    def run(self, interval: float, should_stop: Callable[[], bool] = lambda: False) -> str:
        """Cycle every ``interval`` seconds until ``should_stop()``; survive Airflow outages.

        Logs a line when a cycle changes something or fails, and a summary of the quiet
        cycles every :data:`QUIET_SUMMARY_SECONDS`. Returns why it stopped.
        """
        backoff = interval
        standing_by = False
        quiet = QuietCycles(self.clock())
        while not should_stop():
            lease = self.lease
            if lease is not None and not lease.leading():
                if not standing_by:
                    holder = lease.current()
                    who = f"{holder.holder} leads (epoch {holder.epoch})" if holder else "no one"
                    log.info("standing by for fleet %s: %s", self.fleet.config.job_queue, who)
                standing_by = True
                _sleep(min(interval, lease.renew_every), should_stop)
                continue
            try:
                if standing_by:  # taking over: what was kept may be long out of date
                    self.standing = None
                self._check_no_other_leader(fresh=standing_by)
                standing_by = False
                report = self.cycle()
            except LeaseLost as error:
                log.warning("stopped acting: %s", error)
                self.standing = None
                continue
            except AnotherLeader as error:
                log.error("not acting: %s", error)
                return f"another manager leads: {error}"
            except (Refused, GatewayError, ExternalWorkUnknown, ForeignPools) as error:
                backoff = min(MAX_BACKOFF_SECONDS, max(interval, backoff * 2))
                said = failure(error)
                if isinstance(error, Refused):  # said as an error by the cycle
                    log.error("trying the cycle again in %g s", backoff)
                else:
                    log.warning("%s; no pool grows meanwhile; retrying in %g s", said, backoff)
                self._beat_failure(said)
                _sleep(backoff, should_stop)
                continue
            backoff = interval
            self._reconcile()
            quiet.add(report, self.clock())
            _sleep(interval, should_stop)
        return "asked to stop"

    def _check_no_other_leader(self, *, fresh: bool) -> None:
        """Read the fleet's heartbeat on taking the lead (``fresh``) and right before each
        cycle that writes it: another manager on another database that started first makes
        this one stand down."""
        if self.heartbeat is None or self.me is None:
            return
        if fresh or self._beat_due(self.clock()):
            self.heartbeat.check(self.me)

    def _beat_failure(self, said: str) -> None:
        try:
            self.beat(self.clock(), said)
        except GatewayError as error:
            log.debug("could not write the heartbeat: %s", error)

    def _reconcile(self) -> None:
        """Stop orphaned external work, every ``reconcile_every`` seconds, while leading."""
        if self.reconciler is None or time.monotonic() - self._reconciled < self.reconcile_every:
            return
        if self.lease is not None and not self.lease.leading():
            return
        self._reconciled = time.monotonic()
        try:
            stopped = self.reconciler.reconcile()
        except (GatewayError, JobsUnknown) as error:
            log.warning("reconcile pass stopped, nothing more stopped: %s", error)
            return
        if stopped or self.reconciler.waiting:
            log.info(
                "reconcile: %d orphaned jobs stopped, %d more within their grace",
                len(stopped),
                self.reconciler.waiting,
            )

    def _may_change(self, what: str) -> None:
        """Raise :class:`LeaseLost` unless this manager may start a change now."""
        if self.lease is not None and not self.lease.leading():
            raise LeaseLost(
                f"the lease of fleet {self.fleet.config.job_queue} is not confirmed; "
                f"not going to {what}"
            )

    def _preempt(self, stop: Stop, now: float, *, deferred: bool = False) -> None:
        self._may_change(f"preempt {stop.key}")
        if not self._still_runs(stop):
            return
        self._tell(stop)
        try:
            if stop.fails:
                log.warning("failing %s: %s", stop.key, stop.note)
                self.gateway.fail(stop.key, stop.note)
            else:
                log.info("clearing %s: %s", stop.key, stop.note)
                self.gateway.clear(stop.key, stop.note)
        except GatewayError as error:
            if error.status is None:  # sent, perhaps carried out: asked after next cycle
                self._unanswered[stop.key] = Unanswered(stop, now, deferred)
            raise
        self._preempted(stop, now, deferred=deferred)

    def _settle_unanswered(self) -> None:
        """Ask after the clears and fails sent earlier whose answers did not come: record
        each that Airflow carried out as if it had answered (:mod:`.unanswered`)."""
        for key, sent in list(self._unanswered.items()):
            self._may_change(f"record the preemption of {key}")
            seen = self.gateway.task_state(key)
            del self._unanswered[key]
            if not carried_out(sent.stop, seen):
                log.info("%s was not preempted: Airflow did not carry out the change", key)
                continue
            log.warning(
                "%s was preempted though Airflow did not answer in time; recording it now", key
            )
            self._preempted(sent.stop, sent.at, deferred=sent.deferred)

    def _preempted(self, stop: Stop, now: float, *, deferred: bool) -> None:
        """What follows a clear or fail that Airflow carried out."""
        self.store.record_preemption(stop, _moment(now))
        if deferred and self.external is not None and stop.try_number and self._no_on_kill():
            # no trigger's on_kill runs on this Airflow: the victim's work is stopped here
            self.external.stop(Victim(stop.key, stop.try_number))
        self._count("preemptions", stop.pool)
        if stop.fails:
            self._count("failures", stop.pool)
        else:
            self.gateway.note_after_clear(stop.key, stop.note)

    def _clear_again(self, task: PoolTask, now: float) -> None:
        """Send a task stuck ``restarting`` back to be scheduled (see
        :mod:`~airflow_quota_provider.airflow_pools.restarting`), keeping its note."""
        self._may_change(f"clear {task.key} again")
        last = self.store.last_preemption(task.key)
        note = last.note if last is not None else "Cleared again by the quota pool manager"
        log.warning(
            "%s is still 'restarting' %g s after it was cleared; clearing it again",
            task.key,
            self.restarting.stuck_after,
        )
        self.gateway.clear(task.key, note)
        self.restarting.cleared(task.key, now)
        self.gateway.note_after_clear(task.key, note)

    def _started_unadmitted(self, observed: Observed) -> bool:
        """Whether a task the cycle read as waiting, and did not admit, has started since:
        an earlier cycle opened its pool, and the scheduler queued it before this cycle's
        shrink of that pool landed. Its capacity may be what this cycle gives others, so no
        pool may grow on this cycle's plan. Asked after the shrinks: Airflow's scheduler
        holds a pool's row while it queues into it, so a shrink that has returned comes
        after every queueing that saw the older slots (seen in the Celery chaos run: two
        tasks found their GPUs taken when an admission withdrawn for two owners raced)."""
        admitted = {start.key for start in observed.plan.start}
        waiting = {t.key for t in observed.read if t.state is TaskState.SCHEDULED} - admitted
        if not waiting:
            return False
        started = {t.key for t in self.mirror.read(self.fleet) if t.state.counted}
        raced = sorted(waiting & started)
        for key in raced:
            log.warning("%s started though this cycle did not admit it", key)
        return bool(raced)

    def _still_runs(self, stop: Stop) -> bool:
        """Whether the victim still runs the try the cycle read, asked again just before it
        is cleared or failed. Airflow's clear cannot be made to depend on the task still
        running: a task that ended meanwhile would run again or, when the scheduler was
        marking its run done at that moment, be left without a state in a finished run for
        good (seen under the CeleryExecutor, a clear 47 ms after the task ended)."""
        seen = self.gateway.task_state(stop.key)
        same_try = seen is not None and seen.try_number == (stop.try_number or seen.try_number)
        if seen is not None and same_try and TaskState.of(seen.state).counted:
            return True
        what = "is gone" if seen is None else f"is {seen.state} (try {seen.try_number})"
        log.info("not preempting %s: it %s since the cycle read it", stop.key, what)
        return False

    def _no_on_kill(self) -> bool:
        """Whether this Airflow cancels a deferred task's trigger without its ``on_kill``."""
        return self.gateway.version() < TRIGGER_ON_KILL

    def _tell(self, stop: Stop) -> None:
        if self.external is not None and stop.try_number:
            self.external.tell(Victim(stop.key, stop.try_number), stop.note)

    def _count(self, counter: str, pool: str) -> None:
        metrics.count(counter, self.fleet.config.job_queue, self.fleet.shares[pool][0])

    def _set_pools(self, plan: PoolPlan, pools: dict[str, PoolSlots], *, grow: bool) -> int:
        """Create, restore or shrink pools (``grow=False``), or grow them (``grow=True``)."""
        changed = 0
        for name, slots in plan.slots.items():
            description = self.fleet.description(name)
            have = pools.get(name)
            if have is None:
                if not grow:
                    self._may_change(f"create pool {name}")
                    log.info("creating pool %s with %d slots (it was missing)", name, slots)
                    self.gateway.create_pool(name, slots, description)
                    changed += 1
                continue
            if grow:
                due = slots > have.slots
            else:
                due = slots < have.slots or (slots == have.slots and not have.include_deferred)
            if not due:
                continue
            self._may_change(f"set pool {name} to {slots} slots")
            if not have.include_deferred:
                log.warning("restoring include_deferred of pool %s, turned off by hand", name)
            self.gateway.set_pool(name, slots, description)
            if slots < have.slots:
                self._shrunk[name] = have
            changed += 1
        return changed


def _moment(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


QUIET_SUMMARY_SECONDS = 300.0
"""How often, at most, the manager sums up the cycles that changed nothing."""


class QuietCycles:
    """Logs a cycle that changed something at once, and the quiet ones summed up."""

    def __init__(self, now: float) -> None:
        self.since = now
        self.cycles = 0
        self.quiet = 0
        self.calls = 0

    def add(self, report: CycleReport, now: float) -> None:
        plan = report.plan
        self.cycles += 1
        self.calls += report.calls
        if plan.start or plan.stop or plan.refuse or report.pools_changed:
            log.info(
                "cycle: %d started, %d preempted, %d refused, %d waiting, %d pools changed; "
                "%d REST calls",
                len(plan.start),
                len(plan.stop),
                len(plan.refuse),
                len(plan.waiting),
                report.pools_changed,
                report.calls,
            )
            return
        self.quiet += 1
        if now - self.since >= QUIET_SUMMARY_SECONDS:
            log.info(
                "%d cycles in the last %.0f s changed nothing; %d waiting; %.1f REST calls a cycle",
                self.quiet,
                now - self.since,
                len(plan.waiting),
                self.calls / max(self.cycles, 1),
            )
            self.since, self.quiet, self.calls, self.cycles = now, 0, 0, 1


def failure(error: Exception) -> str:
    """A failed cycle, named for what it is."""
    if isinstance(error, GatewayError):
        return error.kind_and_cause()
    if isinstance(error, ForeignPools):
        return f"the config names another fleet's pools: {error}"
    if isinstance(error, ExternalWorkUnknown):
        return f"cannot see the victims' work ({error})"
    return str(error)


def _sleep(seconds: float, should_stop: Callable[[], bool]) -> None:
    deadline = time.monotonic() + seconds
    while not should_stop() and time.monotonic() < deadline:
        time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
