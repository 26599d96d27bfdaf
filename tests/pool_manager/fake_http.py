"""A quiet request handler answering JSON, for the HTTP servers that stand in for Airflow."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar


class JsonHandler(BaseHTTPRequestHandler):
    """Answers with :meth:`_send`; logs nothing."""

    def _send(self, answer: dict[str, Any], status: int = 200) -> None:
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


Server = TypeVar("Server", bound=ThreadingHTTPServer)


@contextmanager
def serving(server: Server) -> Iterator[Server]:
    """``server`` answering from a thread of its own until the block ends."""
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
