"""The sync planner of a pools fleet: from Airflow's pools and the tasks in them, the
ordered pool changes that make Airflow match a config with ``backend: airflow_pools``.

Pure: the pools and task instances come in as the gateway reads them
(:class:`PoolsState`), the time as a number, and the result is a
:class:`~airflow_quota_provider.sync.changes.Plan` whose calls are methods of
:class:`~airflow_quota_provider.airflow_pools.gateway.AirflowGateway`.

What apply makes true, pool by pool (the config's pools: each share's unit, see
:class:`~airflow_quota_provider.airflow_pools.fleet.Fleet`):

- **missing**: created with the slots the core would open now, that is what
  :func:`~airflow_quota_provider.airflow_pools.decide.decide` gives it for the
  tasks Airflow has now (0, shut, unless it admits one), with ``include_deferred`` on and
  the manager's description. Not the share's capacity: while another share
  borrows, opening what a share owns would promise GPUs that are in use. A
  manager started later finds nothing to change, and until one runs nothing
  beyond what the core admits starts;
- **the manager's** (the description names this fleet): its slots are left
  alone. They are not a setting of the config but the manager's decision of
  the moment, which it makes again at every cycle (from the config it reads,
  so a changed capacity reaches the pools at its next cycle); were apply to set
  them, plan would report a change whenever the demand moved and apply would
  undo the manager's last cycle. Where they differ from what the core opens now
  the plan notes it, without a change. ``include_deferred`` turned off is
  turned on (a deferred task still holds its GPUs), and a description written
  for another of the fleet's shares is corrected, both keeping its slots;
- **someone else's** (no pool-manager description): adopted, with a warning:
  its slots become the core's, ``include_deferred`` is turned on and the
  description is the manager's, so from then on the manager keeps it;
- **another fleet's** (the description names another fleet): a blocker. Two
  managers would fight over its slots; the config must name another pool.

A pool that bears this fleet's description but that the config no longer
names (a share or unit removed, a pool renamed) is deleted. That is
destructive, and a blocker while a task is queued, running, deferred or still
stopping in it (it would hold its GPUs outside every share); tasks that only
wait in it are named in the reason, as they would never start. Pools without
this fleet's mark, ``default_pool`` among them, are never touched.

Destructive (apply needs ``--allow-destructive``): every delete; creating or
adopting a pool whose tasks the core would preempt now (their share holds more than
it may: apply stops nothing, but the manager will once it runs). Slots below what a
pool's tasks hold are not: between admissions the manager keeps every pool shut.

The calls come in three phases, as the manager orders its own, so that an
apply stopped half-way never leaves more slots open than the core admits:
deletes, then changes that open no slot (lowered slots, ``include_deferred``
turned on, descriptions), then creates and raised slots; by pool name within
a phase.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from airflow_quota_provider.airflow_pools.decide import Stop, decide
from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.pools import PoolSlots, managing_fleet
from airflow_quota_provider.airflow_pools.tasks import PoolTask, TaskState
from airflow_quota_provider.exceptions import Problem
from airflow_quota_provider.sync.changes import POOL, Call, Change, Plan

LISTED_TASKS = 3
"""Tasks named in a blocker before ``and N more``."""


@dataclass(frozen=True)
class PoolsState:
    """What Airflow has now.

    :param pools: every pool, by name.
    :param tasks: the task instances that wait for or hold a slot in the config's pools
        and in the pools of :func:`stale_pools`.
    """

    pools: Mapping[str, PoolSlots]
    tasks: Sequence[PoolTask] = ()


def stale_pools(fleet: Fleet, pools: Mapping[str, PoolSlots]) -> list[str]:
    """The pools bearing ``fleet``'s description that its config no longer names."""
    name = fleet.config.job_queue
    return sorted(
        pool
        for pool, found in pools.items()
        if pool not in fleet.shares and managing_fleet(found.description) == name
    )


@dataclass
class _Phases:
    deletes: list[Call] = field(default_factory=list)
    lowers: list[Call] = field(default_factory=list)
    raises: list[Call] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    blockers: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def plan_pools(fleet: Fleet, state: PoolsState, now: float) -> Plan:
    """The pool changes that make Airflow match ``fleet``'s config, in order, at time ``now``."""
    decided = decide(fleet, state.tasks, now)
    core = decided.slots
    preempted: dict[str, list[Stop]] = defaultdict(list)
    for stop in decided.stop:
        preempted[stop.pool].append(stop)
    by_pool: dict[str, list[PoolTask]] = defaultdict(list)
    for task in state.tasks:
        by_pool[task.pool].append(task)
    phases = _Phases()
    for pool in stale_pools(fleet, state.pools):
        _delete(phases, pool, by_pool[pool])
    for pool in sorted(fleet.shares):
        why = _preempts(preempted[pool])
        found = state.pools.get(pool)
        if found is None:
            _create(phases, fleet, pool, core[pool], why)
            continue
        owner = managing_fleet(found.description)
        if owner == fleet.config.job_queue:
            _keep(phases, fleet, found, core[pool])
        elif owner is not None:
            phases.blockers.append(fleet.foreign_pool(pool, owner))
        else:
            _adopt(phases, fleet, found, core[pool], why)
    calls = (*phases.deletes, *phases.lowers, *phases.raises)
    return Plan(
        changes=tuple(call.change for call in calls),
        calls=calls,
        warnings=tuple(phases.warnings),
        blockers=tuple(phases.blockers),
        notes=tuple(phases.notes),
    )


def _create(phases: _Phases, fleet: Fleet, pool: str, slots: int, why: str | None) -> None:
    share, unit = fleet.shares[pool]
    details = (_count(slots, "slot"), "include_deferred on", f"share {share}, {unit}")
    change = Change("create", POOL, pool, details, why)
    params = {"name": pool, "slots": slots, "description": fleet.description(pool)}
    phases.raises.append(Call("create_pool", params, change))


def _keep(phases: _Phases, fleet: Fleet, found: PoolSlots, slots: int) -> None:
    """The manager's own pool: its slots stay; what else differs is set."""
    if found.slots != slots:
        phases.notes.append(f"pool {found.name} slots {_slots(found.slots)} -> {slots}")
    details = _settings(fleet, found)
    if details:
        change = Change("update", POOL, found.name, tuple(details))
        phases.lowers.append(_set(fleet, found.name, found.slots, change))


def _adopt(phases: _Phases, fleet: Fleet, found: PoolSlots, slots: int, why: str | None) -> None:
    share, unit = fleet.shares[found.name]
    phases.warnings.append(
        Problem(
            _config_path(fleet, share, unit),
            f"pool {found.name} was not made by the pool manager (description "
            f"{_quoted(found.description)}); apply adopts it for share {share}'s {unit}: "
            "from then on the pool manager sets its slots",
        )
    )
    unlimited = found.slots < 0
    lowers = unlimited or slots < found.slots
    details = [f"slots {_slots(found.slots)} -> {slots}"] if found.slots != slots else []
    details += _settings(fleet, found)
    change = Change("update", POOL, found.name, tuple(details), why)
    call = _set(fleet, found.name, slots, change)
    (phases.lowers if lowers or slots == found.slots else phases.raises).append(call)


def _delete(phases: _Phases, pool: str, tasks: Sequence[PoolTask]) -> None:
    why = "not in the config"
    waiting = [t for t in tasks if t.state is TaskState.SCHEDULED]
    if waiting:
        why += (
            f"; {_count(len(waiting), 'task')} waiting in it would never start "
            "(Airflow starts no task of a missing pool)"
        )
    change = Change("delete", POOL, pool, destructive=why)
    phases.deletes.append(Call("delete_pool", {"name": pool}, change))
    holding = sorted((t for t in tasks if t.state.holds), key=lambda t: t.key)
    if holding:
        listed = ", ".join(f"{t.key} ({t.state.value})" for t in holding[:LISTED_TASKS])
        if len(holding) > LISTED_TASKS:
            listed += f" and {len(holding) - LISTED_TASKS} more"
        verb = "holds" if len(holding) == 1 else "hold"
        phases.blockers.append(
            f"pool {pool} cannot be deleted while {_count(len(holding), 'task')} {verb} "
            f"slots in it: {listed}; apply again once they have ended"
        )


def _settings(fleet: Fleet, found: PoolSlots) -> list[str]:
    """``include_deferred`` and the description, where they differ from the manager's."""
    details = []
    if not found.include_deferred:
        details.append("include_deferred off -> on")
    wanted = fleet.description(found.name)
    if found.description != wanted:
        details.append(f"description {_quoted(found.description)} -> {_quoted(wanted)}")
    return details


def _set(fleet: Fleet, pool: str, slots: int, change: Change) -> Call:
    params = {"name": pool, "slots": slots, "description": fleet.description(pool)}
    return Call("set_pool", params, change)


def _preempts(stops: Sequence[Stop]) -> str | None:
    """Why taking the pool on costs running work: the tasks in it the core would preempt
    (which only the pool manager does, once it runs), or ``None``."""
    if not stops:
        return None
    listed = ", ".join(str(stop.key) for stop in stops[:LISTED_TASKS])
    if len(stops) > LISTED_TASKS:
        listed += f" and {len(stops) - LISTED_TASKS} more"
    held = sum(stop.slots for stop in stops)
    return (
        f"its tasks hold {held} slots beyond what the share may hold now: the pool manager "
        f"preempts {listed}"
    )


def _config_path(fleet: Fleet, share: str, unit: str) -> str:
    if unit in fleet.config.pools.get(share, {}):
        return f"pools.{share}.{unit}"
    names = [s.name for s in fleet.config.shares]
    return f"shares[{names.index(share)}]"


def _slots(slots: int) -> str:
    return "unlimited" if slots < 0 else str(slots)


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def _quoted(text: str | None) -> str:
    return "(none)" if not text else f'"{text}"'
