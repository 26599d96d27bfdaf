"""A job queue's config as it was at each moment: what a usage history is figured with.

A backend that keeps no history of its config (AWS Batch keeps only today's quota
shares and environments) knows each resource's past only in part: when it was made,
and its settings before its last change, from the records its own changes left.
:class:`Past` holds what is known of one resource: its settings in
:class:`Stretch`\\ es, oldest first, the last one today's; before the first stretch the
resource did not exist. Where the record does not reach (``known_from``), the
stretches are assumptions, and :func:`timeline` says so in its notes.

:class:`Timeline` is the queue's config from moment to moment: before the queue
existed nothing is counted (an empty config), a share owns nothing before it existed,
and the queue's capacity is the sum of its environments' at each moment.

Pure: the backend reads the records and hands them in.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from airflow_quota_provider.core.model import QueueConfig, Resources, Share
from airflow_quota_provider.core.times import when

T = TypeVar("T")

EARLIEST = 0
"""The ``since`` of a stretch whose start is not known: it stands for all before."""


@dataclass(frozen=True, slots=True)
class Stretch(Generic[T]):
    """From ``since`` (epoch ms) until the next stretch, the resource had ``settings``."""

    since: int
    settings: T


@dataclass(frozen=True)
class Past(Generic[T]):
    """What is known of one resource's settings over time.

    :param stretches: oldest first, the last one today's; before the first one's
        ``since`` the resource did not exist.
    :param known_from: from when the stretches are facts (``None``: never; they are all
        assumed). Before it, they stand for what is not known.
    :param why: why the rest is not known, as a note says it (``not made by apply``).
    """

    stretches: tuple[Stretch[T], ...]
    known_from: int | None = EARLIEST
    why: str = ""

    @classmethod
    def unknown(cls, today: T, why: str) -> Past[T]:
        """Nothing known: today's settings stand for the whole past."""
        return cls((Stretch(EARLIEST, today),), None, why)

    def at(self, moment: int) -> T | None:
        """The settings at ``moment``; ``None`` before the resource existed."""
        sinces = [s.since for s in self.stretches]
        index = bisect_right(sinces, moment) - 1
        return None if index < 0 else self.stretches[index].settings

    @property
    def moments(self) -> tuple[int, ...]:
        return tuple(s.since for s in self.stretches if s.since > EARLIEST)


@dataclass(frozen=True)
class QueuePast:
    """What is known of a job queue's past: when it was made, and each environment's
    capacity and each share's settings, by name.

    :param created: when the queue was made (``None``: not known, so it is taken to
        have existed throughout).
    :param today: today's config, whose order of shares and whose other settings stand.
    """

    today: QueueConfig
    created: int | None
    environments: Mapping[str, Past[Resources]] = field(default_factory=dict)
    shares: Mapping[str, Past[Share]] = field(default_factory=dict)
    created_why: str = ""


@dataclass(frozen=True)
class Timeline:
    """The queue's config from each ``starts[i]`` on; before ``starts[0]``, ``configs[0]``.

    :param notes: where the past is not known and what stands for it, in plain words.
    """

    starts: tuple[int, ...]
    configs: tuple[QueueConfig, ...]
    notes: tuple[str, ...] = ()

    @classmethod
    def fixed(cls, config: QueueConfig, notes: Sequence[str] = ()) -> Timeline:
        """One config for all time."""
        return cls((EARLIEST,), (config,), tuple(notes))

    def at(self, moment: int) -> QueueConfig:
        return self.configs[max(0, bisect_right(self.starts, moment) - 1)]

    def changes(self, since: int, until: int) -> Iterator[int]:
        """The moments in ``(since, until)`` at which the config changes."""
        for start in self.starts:
            if since < start < until:
                yield start


def timeline(past: QueuePast, since: int, until: int) -> Timeline:
    """The config at each moment of ``[since, until)``, with a note for each resource whose
    settings over part of the window are not known."""
    moments = {since}
    if past.created is not None and since < past.created < until:
        moments.add(past.created)
    resources: list[Past[Any]] = [*past.environments.values(), *past.shares.values()]
    for resource in resources:
        moments.update(m for m in resource.moments if since < m < until)
    starts = tuple(sorted(moments))
    configs = tuple(_config_at(past, moment) for moment in starts)
    return Timeline(starts, configs, tuple(_notes(past, since, until)))


def _config_at(past: QueuePast, moment: int) -> QueueConfig:
    today = past.today
    if past.created is not None and moment < past.created:
        return replace(today, capacity={}, shares=())
    capacity: dict[str, int] = dict(today.capacity) if not past.environments else {}
    for environment in past.environments.values():
        for unit, count in (environment.at(moment) or {}).items():
            capacity[unit] = capacity.get(unit, 0) + count
    shares = []
    for share in today.shares:
        known = past.shares.get(share.name)
        then = share if known is None else known.at(moment)
        if then is not None:
            shares.append(then)
    return replace(today, capacity=capacity, shares=tuple(shares))


def _notes(past: QueuePast, since: int, until: int) -> Iterator[str]:
    queue = past.today.job_queue
    resources: list[tuple[str, str, Past[Any]]] = [
        *(("service environment", name, p) for name, p in sorted(past.environments.items())),
        *(("quota share", name, p) for name, p in sorted(past.shares.items())),
    ]
    unrecorded = [p.known_from is None and p.why == past.created_why for _, _, p in resources]
    if past.created is None and all(unrecorded):
        yield (
            f"job queue {queue}: no record of when it, its environments or its quota shares "
            f"were made or changed ({past.created_why}): today's quota shares stand for the past"
        )
        return
    if past.created is None:
        yield (
            f"job queue {queue}: when it was made is not known ({past.created_why}): "
            "it is counted as existing throughout"
        )
    elif past.created >= until:
        return
    since = max(since, past.created or since)
    for kind, name, resource in resources:
        note = _unknown(f"{kind} {name}", resource, since)
        if note:
            yield note


def _unknown(title: str, resource: Past[T], since: int) -> str | None:
    """The note for a resource whose settings from ``since`` on are not all known."""
    if resource.known_from is None:
        return f"{title}: its settings are not known ({resource.why}): today's stand for them"
    first = resource.stretches[0].since if resource.stretches else EARLIEST
    if resource.known_from <= max(first, since):
        return None
    return (
        f"{title}: its settings before {when(resource.known_from)} are not known "
        f"({resource.why}): the earliest known stand for them"
    )
