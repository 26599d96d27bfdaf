"""What an operation handler is: a function of the world and the validated parameters."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_quota_provider.emulator.world import World

Params = dict[str, Any]
Response = dict[str, Any]
Handler = Callable[["World", Params], Response]
