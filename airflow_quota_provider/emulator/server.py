"""The HTTP endpoint: AWS requests to the emulator, plus two control routes.

- ``GET /_emulator/stats``: request counts by operation and outcome, and the clock;
- ``GET /_emulator/clock``: the emulated time;
- ``POST /_emulator/clock`` with ``{"advance_seconds": 3600}``: jump ahead;
  with ``{"time_scale": 0}``: pause (any other scale: run at that pace).

:func:`local_endpoint` runs it in a thread of the calling process::

    with local_endpoint(config=quota_config, time_scale=0) as url:
        batch = boto3.client("batch", endpoint_url=url, region_name="us-east-1", ...)

Faults (:mod:`.faults`) apply to AWS requests only, never to the control routes.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

from airflow_quota_provider.core.model import QueueConfig
from airflow_quota_provider.emulator.bootstrap import apply_config
from airflow_quota_provider.emulator.clock import to_millis
from airflow_quota_provider.emulator.emulator import Emulator, EmulatorOptions
from airflow_quota_provider.emulator.faults import FaultOptions

log = logging.getLogger(__name__)

CONTROL_PREFIX = "/_emulator/"
MIN_PORT, MAX_PORT = 0, 65535


class _Handler(BaseHTTPRequestHandler):
    server: EmulatorHTTPServer
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes; without this, Nagle's algorithm and the
        # client's delayed ACK hold every response back by ~40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def _serve(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.path.startswith(CONTROL_PREFIX):
            status, payload = control(self.server.emulator, method, self.path, body)
            self._send(status, {"Content-Type": "application/json"}, json.dumps(payload).encode())
            return
        headers = {key: value for key, value in self.headers.items()}
        response = self.server.emulator.handle_http(method, self.path, headers, body)
        self._send(response.status, response.headers, response.body)

    def _send(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def date_time_string(self, timestamp: float | None = None) -> str:
        """Every answer's ``Date``: the emulated time, as AWS's answers carry the time of
        the clock their timestamps come from (clients may measure ages against it)."""
        now = self.server.emulator.now() if timestamp is None else timestamp
        return super().date_time_string(now)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)


def control(emulator: Emulator, method: str, path: str, body: bytes) -> tuple[int, Any]:
    """Answer a ``/_emulator/...`` request: ``(status, JSON payload)``."""
    route = path.split("?", 1)[0][len(CONTROL_PREFIX) :].rstrip("/")
    if route == "stats" and method == "GET":
        return 200, {**emulator.stats.snapshot(), "clock": clock_state(emulator)}
    if route == "clock" and method == "GET":
        return 200, clock_state(emulator)
    if route == "clock" and method == "POST":
        return clock_change(emulator, body)
    return 404, {"message": f"no control route {method} {path}"}


def clock_change(emulator: Emulator, body: bytes) -> tuple[int, Any]:
    """``{"advance_seconds": S}`` and/or ``{"time_scale": X}``: move or re-pace the clock."""
    expected = 'expected {"advance_seconds": <seconds >= 0>, "time_scale": <scale >= 0>}'
    try:
        change = json.loads(body or b"{}")
        unknown = sorted(set(change) - {"advance_seconds", "time_scale"})
        if unknown:
            return 400, {"message": f"{expected}; unknown fields: {', '.join(unknown)}"}
        if "time_scale" in change:
            emulator.set_time_scale(float(change["time_scale"]))
        emulator.advance(float(change.get("advance_seconds", 0)))
    except (ValueError, TypeError, AttributeError) as error:
        return 400, {"message": f"{expected}: {error}"}
    return 200, clock_state(emulator)


def clock_state(emulator: Emulator) -> dict[str, Any]:
    now = emulator.now()
    return {"now": now, "now_millis": to_millis(now), "time_scale": emulator.clock.time_scale}


class EmulatorHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], emulator: Emulator) -> None:
        super().__init__(address, _Handler)
        self.emulator = emulator


class EmulatorServer:
    """An emulator served on ``host:port`` from a background thread; port 0 picks a free one."""

    def __init__(
        self,
        emulator: Emulator | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        if not MIN_PORT <= port <= MAX_PORT:
            raise ValueError(f"port must be from {MIN_PORT} to {MAX_PORT}, got {port}")
        self.emulator = emulator or Emulator()
        self.httpd = EmulatorHTTPServer((host, port), self.emulator)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> EmulatorServer:
        # A short poll interval makes stop() (and so each test's teardown) quick.
        self._thread = threading.Thread(
            target=self.httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="aws-emulator",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, then save and close the emulator's state file, if it has one."""
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join()
        self.emulator.close()

    def __enter__(self) -> EmulatorServer:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


@contextmanager
def local_endpoint(
    config: QueueConfig | None = None,
    *,
    time_scale: float = 1.0,
    host: str = "127.0.0.1",
    port: int = 0,
    instance_limits: Mapping[str, int] | None = None,
    state: str | Path | None = None,
    faults: FaultOptions | None = None,
) -> Iterator[str]:
    """Serve an emulator for the duration of the ``with`` block; yields its endpoint URL.

    :param config: a quota config whose environment, policy, queue and shares
        are created before the first request, as ``--config`` does; ignored
        when ``state`` names a file that already holds an account.
    :param time_scale: emulated seconds per real second; 0 stops the clock.
    :param host: the address to listen on.
    :param port: the port to listen on; 0 picks a free one.
    :param instance_limits: instances per type direct CreateTrainingJob calls may hold.
    :param state: an SQLite file to keep the account in across restarts (``--state``).
    :param faults: throttling, errors, latency and capacity errors to inject.
    """
    options = EmulatorOptions(
        time_scale=time_scale,
        instance_limits=dict(instance_limits or {}),
        state=state,
        faults=faults or FaultOptions(),
    )
    emulator = Emulator(options)
    if config is not None and not emulator.restored:
        apply_config(emulator, config)
    with EmulatorServer(emulator, host, port) as server:
        yield server.url
