"""``maxResults`` / ``nextToken`` paging that stays correct while items come and go.

A token holds the sort key of the last item returned, not an offset, so a job
submitted between two pages neither repeats nor hides another one.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from airflow_quota_provider.emulator.errors import BatchClientError, invalid_input
from airflow_quota_provider.emulator.service_model import BATCH

T = TypeVar("T")
SortKey = tuple[Any, ...]


def page(
    items: Sequence[T],
    key: Callable[[T], SortKey],
    *,
    limit: int,
    token: str | None,
    service: str,
    descending: bool = False,
) -> tuple[list[T], str | None]:
    """The page of ``items`` after ``token``, and the token of the next page, if any.

    ``items`` must be sorted by ``key`` (descending if ``descending``).
    """
    if token:
        last = _decode(token, service)
        if descending:
            items = [item for item in items if list(key(item)) < last]
        else:
            items = [item for item in items if list(key(item)) > last]
    chosen = list(items[:limit])
    more = len(items) > limit
    return chosen, _encode(key(chosen[-1])) if more and chosen else None


def _encode(key: SortKey) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode()


def _decode(token: str, service: str) -> list[Any]:
    try:
        value = json.loads(base64.urlsafe_b64decode(token.encode()))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        value = None
    if not isinstance(value, list):
        raise invalid_input(service, f"invalid nextToken {token!r}")
    return value


def check_limit(value: Any, default: int, service: str, maximum: int = 100) -> int:
    """``maxResults`` as the services document it: 1 to ``maximum``, ``default`` if absent."""
    if value is None:
        return default
    if not 1 <= value <= maximum:
        raise invalid_input(service, f"maxResults must be between 1 and {maximum}, got {value}")
    return int(value)


class Named(Protocol):
    name: str
    arn: str


N = TypeVar("N", bound=Named)


def named_page(
    items: Iterable[N], wanted: Sequence[str] | None, params: Mapping[str, Any], too_many: str
) -> tuple[list[N], str | None]:
    """One page of Batch resources by name, those ``wanted`` (names or ARNs) if given,
    as Batch's ``Describe...s`` calls page them; more than 100 wanted is ``too_many``."""
    if wanted is not None and len(wanted) > 100:
        raise BatchClientError(too_many)
    ordered = sorted(items, key=lambda item: item.name)
    if wanted:
        ordered = [item for item in ordered if item.name in wanted or item.arn in wanted]
    limit = check_limit(params.get("maxResults"), 100, BATCH)
    return page(
        ordered,
        lambda item: (item.name,),
        limit=limit,
        token=params.get("nextToken"),
        service=BATCH,
    )
