"""How a trigger reads an Airflow connection, safely on every triggerer; and the AWS hooks
built from one, shared by the triggers of a process.

A trigger runs on the triggerer's event loop, which must never wait. On Airflow 3 a
connection comes from the triggerer's supervisor, over the one channel
(``SUPERVISOR_COMMS``) whose answers the loop reads; masking the connection's secrets
is a message to the supervisor too. Asked from a plain thread (``asyncio.to_thread``),
Airflow 3.0 and 3.1 send that message from an event loop of their own, in yet another
thread, which reads the channel beside the triggerer's loop: answers are taken by the
wrong reader ("Response read out of order!") and the trigger runner dies, with every
trigger of the deployment in it. So :func:`get_connection` reads it with what each
release offers:

- **Airflow 3.3.2 and later**: ``BaseHook.aget_connection`` and
  ``Connection.aextra_dejson``, coroutines that await the supervisor's answers on the loop.
- **Airflow 3.0 to 3.3.1**: ``aget_connection`` (3.1 on) still masks secrets with a
  blocking call, which cannot run on the loop. The blocking ``BaseHook.get_connection``
  runs under ``asgiref``'s ``sync_to_async`` instead: in its thread, the SDK's
  ``async_to_sync`` hands each message back to the loop that ``sync_to_async`` was called
  from, as the triggerer's ``init_comms`` asks, so only the loop writes and reads the
  channel. (3.2 and later also accept plain threads; this way serves every release.)
- **Airflow 2.11**: no supervisor: the connection comes from the metadata database or
  a secrets backend, which ``sync_to_async`` keeps off the loop too (the amazon
  provider's async hooks read theirs the same way).

The answer, a :class:`TriggerConnection`, holds the fields with the extra already parsed
and masked, so using it (building a boto3 client from it in a thread, say) asks Airflow
nothing more. :func:`aws_hook` does that for AWS hooks: it builds each hook in a thread
(where boto3 is imported and its client made) from the connection read here, once per
hook, arguments and connection in a process (per event loop), and its triggers share it:
boto3 clients are thread-safe, and one client instead of one per trigger spares the
triggerer the memory of each client's service model and the garbage collections that
would stop its loop while reclaiming it.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from airflow.providers.common.compat.sdk import AirflowNotFoundException, BaseHook, Connection

if TYPE_CHECKING:
    from airflow.providers.amazon.aws.hooks.base_aws import AwsGenericHook

    from airflow_quota_provider.hooks.batch import BatchQuotaHook

    AnyAwsHook = AwsGenericHook[Any]
else:
    AnyAwsHook = Any

H = TypeVar("H", bound=AnyAwsHook)


@dataclass(frozen=True)
class TriggerConnection:
    """An Airflow connection as read on a trigger's event loop: nothing about it calls
    Airflow again."""

    conn_id: str
    conn_type: str | None
    host: str | None
    login: str | None
    password: str | None = field(repr=False)
    schema: str | None
    port: int | None
    extra_dejson: dict[str, Any] = field(repr=False)
    """The extra, parsed (its secrets masked when it was read)."""

    def key(self) -> str:
        """Every field, as one string: equal for equal connections."""
        return json.dumps(asdict(self), sort_keys=True, default=str)


def _fields(conn: Any, extra: dict[str, Any]) -> TriggerConnection:
    return TriggerConnection(
        conn_id=conn.conn_id,
        conn_type=conn.conn_type,
        host=conn.host,
        login=conn.login,
        password=conn.password,
        schema=conn.schema,
        port=conn.port,
        extra_dejson=extra,
    )


def _read(conn_id: str) -> TriggerConnection:
    """The blocking read, for ``sync_to_async``."""
    conn = BaseHook.get_connection(conn_id)
    return _fields(conn, conn.extra_dejson)


async def get_connection(conn_id: str) -> TriggerConnection:
    """The connection ``conn_id``, read from a trigger's event loop without blocking it, on
    every Airflow release (see the module docstring); ``AirflowNotFoundException`` if
    there is none."""
    if hasattr(Connection, "aextra_dejson"):  # Airflow 3.3.2 and later
        conn = await BaseHook.aget_connection(conn_id)
        return _fields(conn, await conn.aextra_dejson())
    if _inline():
        return _read(conn_id)
    from asgiref.sync import sync_to_async

    return await sync_to_async(_read)(conn_id)


def _inline() -> bool:
    """Whether the trigger runs inline under ``dag.test()``: its supervisor is an object in
    this process, answering each message at once, with no channel for a loop to share; there
    ``sync_to_async``'s hand-back races ``dag.test()``'s own swaps of the comms (Airflow
    3.1: a deferred task whose wait times out then fails instead of being retried)."""
    try:
        from airflow.sdk.execution_time import task_runner
    except ImportError:  # Airflow 2
        return False
    comms = getattr(task_runner, "SUPERVISOR_COMMS", None)
    return type(comms).__name__ == "InProcessSupervisorComms"


_HookKey = tuple[Callable[..., Any], str, str | None]
_HOOKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[_HookKey, asyncio.Future[Any]]]
_HOOKS = weakref.WeakKeyDictionary()


def aws_hook_arguments(
    aws_conn_id: str | None,
    region_name: str | None,
    verify: bool | str | None,
    botocore_config: dict[str, Any] | None,
) -> dict[str, Any]:
    """An AWS hook's keyword arguments from the parameters the provider's operators, sensors
    and triggers take (``botocore_config`` is the hooks' ``config``), for :func:`aws_hook`."""
    return {
        "aws_conn_id": aws_conn_id,
        "region_name": region_name,
        "verify": verify,
        "config": botocore_config,
    }


async def aws_hook(make: Callable[..., H], **arguments: Any) -> H:
    """The hook ``make(**arguments)`` (``aws_conn_id``, ``region_name``, ...), its client built.

    Its connection is read here, on the loop (:func:`get_connection`); the hook is made and
    its client built in a thread, which then asks Airflow nothing. Triggers of one event
    loop asking for the same hook with the same connection share one (see the module
    docstring); a changed connection gets a new one, a failed build is tried again next
    time. ``make`` imports what it needs when called, so that boto3 is imported in that
    thread too, not on the loop.
    """
    conn_id = arguments.get("aws_conn_id")
    conn: TriggerConnection | None = None
    if conn_id:
        try:
            conn = await get_connection(conn_id)
        except AirflowNotFoundException:
            conn = None  # the hook says so, and uses boto3's defaults, as it does anywhere
    key: _HookKey = (
        make,
        json.dumps(arguments, sort_keys=True, default=str),
        conn.key() if conn else None,
    )
    built = _HOOKS.setdefault(asyncio.get_running_loop(), {})
    future = built.get(key)
    if future is None:
        future = asyncio.get_running_loop().run_in_executor(None, _build, make, arguments, conn)
        built[key] = future
        future.add_done_callback(lambda done: _forget_failed(built, key, done))
    hook: H = await asyncio.shield(future)
    return hook


def _build(make: Callable[..., H], arguments: dict[str, Any], conn: TriggerConnection | None) -> H:
    hook = make(**arguments)

    def get_connection(conn_id: str) -> TriggerConnection:
        if conn is None:
            raise AirflowNotFoundException(f"The conn_id `{conn_id}` isn't defined")
        return conn

    # the amazon provider's hooks read their connection through this when they first
    # need it (``conn_config``): it gets the one read on the loop
    hook.get_connection = get_connection  # type: ignore[method-assign,assignment]
    hook.conn  # noqa: B018  (builds the client)
    return hook


def _forget_failed(
    built: dict[_HookKey, asyncio.Future[Any]], key: _HookKey, done: asyncio.Future[Any]
) -> None:
    if done.cancelled() or done.exception() is not None:
        built.pop(key, None)


def batch_quota_hook(**arguments: Any) -> BatchQuotaHook:
    """A :class:`~airflow_quota_provider.hooks.batch.BatchQuotaHook`, imported here."""
    from airflow_quota_provider.hooks.batch import BatchQuotaHook

    return BatchQuotaHook(**arguments)
