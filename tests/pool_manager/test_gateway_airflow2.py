"""Pointed at an Airflow 2 webserver, the gateway says the manager needs Airflow 3.

Airflow 2's webserver answers 404 to ``POST /auth/token`` (its API is ``/api/v1``
with basic or session auth); a server here answers every route that way.
"""

from __future__ import annotations

from collections.abc import Iterator
from http.server import ThreadingHTTPServer

import pytest

from airflow_quota_provider.airflow_pools.gateway import AirflowGateway, Credentials, GatewayError
from tests.pool_manager.fake_http import JsonHandler, serving


class _NotFound(JsonHandler):
    def do_POST(self) -> None:
        self._send({"detail": "Not Found"}, 404)

    do_GET = do_POST


@pytest.fixture
def airflow2() -> Iterator[str]:
    with serving(ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}"


def test_an_airflow_without_the_token_route_is_named_as_too_old(airflow2: str) -> None:
    gateway = AirflowGateway(airflow2, Credentials("manager", "secret"))
    with pytest.raises(GatewayError) as raised:
        gateway.task_instances(["quota-a-gpu"])
    message = str(raised.value)
    assert f"{airflow2} has no POST /auth/token" in message
    assert "needs Airflow 3's API server" in message
    assert "secret" not in message
