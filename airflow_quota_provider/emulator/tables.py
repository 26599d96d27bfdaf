"""A table of records that remembers which of them were reached, so a save encodes only those.

The emulator's records are mutable and changed in place, by many modules.
Rather than ask each of them to report its changes, every table the state
is made of (:meth:`~airflow_quota_provider.emulator.world.World.tables`)
notes the key of every record it hands out, stores or deletes. A record can
only change after it was reached through its table (nothing holds a record
past the request that reached it), so the keys reached since the last save
are a superset of the records changed since: :mod:`.state_file` encodes
those and writes the ones whose row differs. A scan (``values()``,
``items()``) reaches every record; that costs encoding, never correctness,
and code that only counts reads :meth:`Table.unnoted` instead. The jobs
each queue holds are kept by the core, in objects the emulator does not
own; :mod:`.queue_states` records them in a table as the core moves them.

Not noticed: a change to an object two records share, through the one not
reached. Records share no mutable objects they change in place (tags,
attempts and transitions each belong to one record).
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping, MutableMapping, ValuesView
from types import MappingProxyType
from typing import TypeVar

R = TypeVar("R")


class Table(MutableMapping[str, R]):
    """A ``dict`` of records by key that notes every key reached, until :meth:`drain`."""

    def __init__(self) -> None:
        self._records: dict[str, R] = {}
        self._reached: set[str] = set()

    def __getitem__(self, key: str) -> R:
        record = self._records[key]
        self._reached.add(key)
        return record

    def __setitem__(self, key: str, record: R) -> None:
        self._records[key] = record
        self._reached.add(key)

    def __delitem__(self, key: str) -> None:
        del self._records[key]
        self._reached.add(key)

    def __contains__(self, key: object) -> bool:
        # Asking whether a key is there hands out no record.
        return key in self._records

    def __iter__(self) -> Iterator[str]:
        return iter(self._records)

    def __len__(self) -> int:
        return len(self._records)

    # A scan reaches every record; noting the keys at once keeps it at dict speed.
    def values(self) -> ValuesView[R]:
        self._reached.update(self._records)
        return self._records.values()

    def items(self) -> ItemsView[str, R]:
        self._reached.update(self._records)
        return self._records.items()

    def __repr__(self) -> str:
        return f"Table({self._records!r})"

    def drain(self) -> set[str]:
        """The keys reached since the last drain (records gone since included), forgotten now."""
        reached, self._reached = self._reached, set()
        return reached

    def unnoted(self) -> Mapping[str, R]:
        """The records without noting them, for code that only reads (the state file, a count).

        A record changed through this view is not saved: reach it through the table.
        """
        return MappingProxyType(self._records)
