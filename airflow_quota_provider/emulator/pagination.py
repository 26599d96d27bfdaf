"""``maxResults`` / ``nextToken`` paging that stays correct while items come and go.

A token holds the sort key of the last item returned, not an offset, so a job
submitted between two pages neither repeats nor hides another one.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from airflow_quota_provider.emulator.errors import invalid_input

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
