"""``--state FILE``: the emulated account kept in SQLite, so a restart loses nothing.

What is kept: every record of the store (service environments, scheduling
policies, job queues with the ``--config`` settings AWS has no field for,
quota shares, tags, service jobs with their attempts and preemption
history, training jobs, client tokens, checkpoints), the pending timers
(a training phase ending, a job entering its queue, a timeout), each
queue's running and waiting jobs as the core holds them (one row per job,
:mod:`.queue_states`), and the clock.

How: one mechanism, a save after every request that may have changed
something (any operation that is not a Describe/List/Get, and any request
during which a timer fired), inside the emulator's lock. The world's tables
note every record reached since the last save (:mod:`.tables`), a superset
of those changed; only these are encoded to JSON and compared with the row
the file holds. Changed rows are written and vanished rows deleted in one
transaction, so the file always holds the state after some whole request,
never part of one; a save that fails keeps what it had to write for the
next. The file holds what a save of every record would (:func:`encode`).
At start the world is rebuilt from it, and :func:`load` reports whether
there was anything to rebuild (``--config`` applies only to a new file).

Time across a restart: **the emulated clock resumes from the time saved
last**, at the last saving request or at a clean stop, not from wall time
elapsed x time scale. The account is paused while the emulator is down: a
training job 10 emulated minutes into a 60-minute run finishes 50 emulated
minutes after the restart. Counting the downtime would make a restart at
``--time-scale 3600`` after a coffee break finish every job at once, and a
restart at ``--time-scale 0`` inexact. The time scale belongs to each run,
not to the state. Killed without a clean stop (SIGKILL), the emulator
resumes from its last saving request.

Not kept: request statistics (``/_emulator/stats`` counts this run) and
where the fault generators are in their sequences.

Schema: one table ``rows(kind, key, body)``, ``body`` JSON, so the file can
be read with the ``sqlite3`` shell. Format 1 kept each queue's jobs in one
``queue-state`` row; such a file is read, and rewritten in this format at
start. Rows of a kind this version does not keep are deleted then.

One endpoint per file: two would each write the world they hold over the
other's. An endpoint holds an exclusive ``flock`` on ``FILE.lock`` (with its
pid in it) while it has the file open; a second one is refused, naming the
first. The operating system releases the lock when the process ends, however
it ends.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_quota_provider.core import RunningJob, WaitingJob
from airflow_quota_provider.core.config import config_to_dict, parse_config
from airflow_quota_provider.emulator.dispatch import RECHECK
from airflow_quota_provider.emulator.queue_states import Placement
from airflow_quota_provider.emulator.store import (
    Attempt,
    JobQueue,
    QuotaShare,
    SchedulingPolicy,
    ServiceEnvironment,
    ServiceJob,
    TrainingJob,
)
from airflow_quota_provider.emulator.timers import Timer

if TYPE_CHECKING:
    from airflow_quota_provider.emulator.world import World

FORMAT = 2
"""Bumped when the rows change meaning; a file of a format not in :data:`READS` is refused."""
READS = (1, FORMAT)
"""The formats this version loads; it saves in :data:`FORMAT`."""

Rows = dict[tuple[str, str], str]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS rows (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (kind, key)
)
"""


class StateFileError(Exception):
    """The file cannot serve: another endpoint has it, it cannot be opened, or not read."""


class StateFile:
    """One SQLite file holding one emulated account."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = _take_lock(self.path)
        # Requests arrive on the server's threads, but only ever one at a time (the
        # emulator's lock), so one connection shared across threads is safe.
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        # WAL with synchronous=NORMAL survives a crash of the process, not of the machine,
        # and makes a save cost no fsync: enough for a development endpoint.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)
        self._written: Rows = dict(self._read())
        self._unsaved: dict[str, set[str]] = {}
        """Keys by kind reached but not yet saved: a failed save leaves them for the next."""
        self._check_format()

    def _read(self) -> Iterator[tuple[tuple[str, str], str]]:
        for kind, key, body in self._db.execute("SELECT kind, key, body FROM rows"):
            yield (kind, key), body

    def _check_format(self) -> None:
        saved = self._written.get(("meta", "format"))
        if saved is not None and saved not in map(str, READS):
            readable = " and ".join(map(str, READS))
            raise StateFileError(
                f"{self.path} holds emulator state of format {saved}; "
                f"this version reads formats {readable}"
            )

    @property
    def empty(self) -> bool:
        return not self._written

    def saved_clock(self) -> float | None:
        """The emulated time the file was saved at, if it holds any state."""
        body = self._written.get(("meta", "now"))
        try:
            return None if body is None else float(json.loads(body))
        except (ValueError, TypeError) as error:
            raise self._unreadable(error) from error

    def save(self, world: World) -> int:
        """Write what changed since the last save; returns how many rows were written."""
        for kind, keys in world.drain_reached().items():
            self._unsaved.setdefault(kind, set()).update(keys)
        rows = {**_rows_of(world, self._unsaved), **_meta_rows(world)}
        changed = {key: body for key, body in rows.items() if self._written.get(key) != body}
        if changed:
            self._write(changed)
        self._unsaved.clear()
        return len(changed)

    def _write(self, changed: dict[tuple[str, str], str | None]) -> None:
        """Store ``changed`` rows (``None``: delete the row) in one transaction."""
        kept = {key: body for key, body in changed.items() if body is not None}
        with self._transaction():
            self._db.executemany(
                "INSERT OR REPLACE INTO rows (kind, key, body) VALUES (?, ?, ?)",
                [(kind, key, body) for (kind, key), body in kept.items()],
            )
            self._db.executemany(
                "DELETE FROM rows WHERE kind = ? AND key = ?",
                [key for key in changed if key not in kept],
            )
        for key in changed.keys() - kept.keys():
            del self._written[key]
        self._written.update(kept)

    def _unreadable(self, error: Exception) -> StateFileError:
        return StateFileError(
            f"{self.path} holds rows this version cannot read ({type(error).__name__}: {error})"
        )

    def _transaction(self) -> Any:
        return _Transaction(self._db)

    def load(self, world: World) -> bool:
        """Rebuild ``world`` from the file; ``False`` if the file held nothing."""
        if self.empty:
            return False
        try:
            decode(world, self._written)
        except (ValueError, TypeError, KeyError) as error:
            raise self._unreadable(error) from error
        kept = world.tables().keys() | {"meta"}
        for kind, key in self._written:
            if kind not in kept:
                self._unsaved.setdefault(kind, set()).add(key)
        return True

    def close(self) -> None:
        self._db.close()
        self._lock.close()  # releases the flock


def _take_lock(path: Path) -> Any:
    """An open ``PATH.lock`` holding an exclusive flock, our pid written in it."""
    lock_path = path.with_name(path.name + ".lock")
    try:
        handle = lock_path.open("a+")
    except OSError as error:
        raise StateFileError(f"cannot open {lock_path}: {error.strerror}") from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "unknown"
        handle.close()
        raise StateFileError(
            f"another emulator (pid {holder}) is using this state file; stop it, or give "
            "this one another --state"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN")

    def __exit__(self, kind: object, value: object, traceback: object) -> None:
        self._db.execute("COMMIT" if kind is None else "ROLLBACK")


# -- encoding ----------------------------------------------------------------------


def _plain(record: Any) -> dict[str, Any]:
    return {f.name: getattr(record, f.name) for f in fields(record)}


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=_mappings)


def _mappings(value: Any) -> Any:
    # The core types demands as Mapping; a read-only view must still encode.
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"cannot save {type(value).__name__} in the state file")


def _job_row(job: ServiceJob) -> dict[str, Any]:
    row = _plain(job)
    row["attempts"] = [_plain(a) for a in job.attempts]
    row["recent_preempted"] = [_plain(a) for a in job.recent_preempted]
    return row


def _queue_row(queue: JobQueue) -> dict[str, Any]:
    row = _plain(queue)
    row["extensions"] = None if queue.extensions is None else config_to_dict(queue.extensions)
    return row


def _placement_row(placement: Placement) -> dict[str, Any]:
    where = "running" if isinstance(placement.job, RunningJob) else "waiting"
    return {"queue": placement.queue_arn, "order": placement.order, where: _plain(placement.job)}


def _timer_row(pending: tuple[float, Timer]) -> list[Any]:
    due, timer = pending
    return [due, timer.kind, list(timer.args)]


_TO_ROW: dict[str, Callable[[Any], Any]] = {
    "environment": _plain,
    "policy": _plain,
    "queue": _queue_row,
    "share": _plain,
    "job": _job_row,
    "training-job": _plain,
    "client-token": list,
    "checkpoint": float,
    "placement": _placement_row,
    "timer": _timer_row,
}
"""How each of the world's tables (:meth:`World.tables`) becomes rows, by kind."""


def encode(world: World) -> Rows:
    """Every row the world's state takes, by ``(kind, key)``: what the file holds once saved."""
    rows: Rows = {}
    for kind, table in world.tables().items():
        to_row = _TO_ROW[kind]
        for key, record in table.unnoted().items():
            rows[kind, key] = _json(to_row(record))
    rows.update(_meta_rows(world))
    return rows


def _rows_of(world: World, keys: Mapping[str, set[str]]) -> dict[tuple[str, str], str | None]:
    """The rows of these records as they are now; ``None`` for a record that is gone."""
    tables = world.tables()
    rows: dict[tuple[str, str], str | None] = {}
    for kind, of_kind in keys.items():
        records = tables[kind].unnoted() if kind in tables else {}
        for key in of_kind:
            record = records.get(key)
            rows[kind, key] = None if record is None else _json(_TO_ROW[kind](record))
    return rows


def _meta_rows(world: World) -> Rows:
    meta = {"format": FORMAT, "now": world.now, "last_submitted": world.store.last_submitted}
    return {("meta", key): _json(value) for key, value in meta.items()}


# -- decoding ----------------------------------------------------------------------


def _of_kind(rows: Rows, kind: str) -> Iterator[tuple[str, Any]]:
    for (k, key), body in rows.items():
        if k == kind:
            yield key, json.loads(body)


def _job(row: dict[str, Any]) -> ServiceJob:
    row["attempts"] = [Attempt(**a) for a in row["attempts"]]
    row["recent_preempted"] = [Attempt(**a) for a in row["recent_preempted"]]
    return ServiceJob(**row)


def _queue(row: dict[str, Any]) -> JobQueue:
    extensions = row["extensions"]
    row["extensions"] = None if extensions is None else parse_config(extensions)
    return JobQueue(**row)


def decode(world: World, rows: Rows) -> None:
    """Fill an empty ``world`` with the state ``rows`` hold."""
    store = world.store
    store.environments.update(
        (k, ServiceEnvironment(**r)) for k, r in _of_kind(rows, "environment")
    )
    store.policies.update((k, SchedulingPolicy(**r)) for k, r in _of_kind(rows, "policy"))
    store.queues.update((k, _queue(r)) for k, r in _of_kind(rows, "queue"))
    store.shares.update((k, QuotaShare(**r)) for k, r in _of_kind(rows, "share"))
    store.jobs.update((k, _job(r)) for k, r in _of_kind(rows, "job"))
    store.training_jobs.update((k, TrainingJob(**r)) for k, r in _of_kind(rows, "training-job"))
    store.client_tokens.update((k, (r[0], r[1])) for k, r in _of_kind(rows, "client-token"))
    store.checkpoints.update(_of_kind(rows, "checkpoint"))
    meta = dict(_of_kind(rows, "meta"))
    store.last_submitted = meta["last_submitted"]
    world.now = meta["now"]
    _restore_timers(world, rows)
    _restore_queue_states(world, rows)


def _restore_timers(world: World, rows: Rows) -> None:
    for sequence, (due, kind, args) in _of_kind(rows, "timer"):
        world.timers.at(due, Timer(kind, tuple(args)), sequence=int(sequence))
        if kind == RECHECK:
            world.dispatcher.rechecks[args[0]] = due


def _restore_queue_states(world: World, rows: Rows) -> None:
    placed: dict[str, list[Placement]] = {}
    for placement in [*_placements(rows), *_format_1_placements(rows)]:
        placed.setdefault(placement.queue_arn, []).append(placement)
    for arn in world.store.queues:
        # Also marks the queue dirty: its last decisions (the wait reasons) are recomputed;
        # deciding anything new is impossible, as the state was saved settled at this time.
        world.dispatcher.queue_changed(arn).restore(placed.get(arn, ()))


def _placements(rows: Rows) -> Iterator[Placement]:
    for _, row in _of_kind(rows, "placement"):
        job = RunningJob(**row["running"]) if "running" in row else WaitingJob(**row["waiting"])
        yield Placement(row["queue"], row["order"], job)


def _format_1_placements(rows: Rows) -> Iterator[Placement]:
    """Format 1's one row per queue: its running jobs, then its waiting jobs, in order."""
    for arn, row in _of_kind(rows, "queue-state"):
        jobs: list[RunningJob | WaitingJob] = [
            *(RunningJob(**job) for job in row["running"]),
            *(WaitingJob(**job) for job in row["waiting"]),
        ]
        for order, job in enumerate(jobs, start=1):
            yield Placement(arn, order, job)
