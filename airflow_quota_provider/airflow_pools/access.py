"""What the pool manager's user may do on an api-server, asked of the api-server itself.

Each check is the call the manager makes, aimed where it changes nothing a manager
relies on: a pool and a DAG that do not exist (the api-server checks the user's
right before it looks for them, so 404 means allowed and 403 refused), and a Variable
of its own that is written, read back and deleted. The Variable is written for real
because the api-server encrypts it with its fernet key, the path that a broken
installation (cryptography 51 beside Airflow 2.11 to 3.1) fails with a 500.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from airflow_quota_provider.airflow_pools.gateway import AirflowGateway
from airflow_quota_provider.airflow_pools.rest import ROLE_ADVICE, GatewayError, path
from airflow_quota_provider.installation import Finding

PROBE = "airflow-quota-doctor-probe"
"""The pool and DAG looked for (never made), and the prefix of the Variable written."""
INSTALLATION_ADVICE = (
    "the api-server's own installation fails: run `airflow-quota doctor` where it runs "
    "(on Airflow 2.11 to 3.1, cryptography 51 breaks every encrypted write: pin "
    '"cryptography<51" there)'
)


def access_findings(gateway: AirflowGateway) -> list[Finding]:
    """The api-server answers, the login works, and the user may read pools, write pools,
    clear task instances and write Variables; the checks stop at the first that cannot
    be made (an api-server away, a login refused)."""
    where = gateway.base_url
    user = gateway.credentials.username
    try:
        version = gateway.version()
    except GatewayError as error:
        if error.what != "log in" or error.status is None:
            return [_refusal(f"api-server {where}", error)]
        return [Finding(f"api-server {where} answers", True), _refusal(f"{user} logs in", error)]
    found = [Finding(f"api-server {where} answers (Airflow {version})", True)]
    found.append(Finding(f"{user} logs in", True))
    for what, check in (
        ("read pools", lambda: _read_pools(gateway)),
        ("write pools", lambda: _may(gateway, "PATCH", path("pools", PROBE), _pool_body())),
        ("clear task instances", lambda: _may_clear(gateway)),
        ("write Variables", lambda: _write_variable(gateway)),
    ):
        found.append(_ask(f"{user} may {what}", check))
    return found


def _ask(what: str, check: Callable[[], None]) -> Finding:
    try:
        check()
    except GatewayError as error:
        return _refusal(what, error)
    return Finding(what, True)


def _refusal(what: str, error: GatewayError) -> Finding:
    if error.status is None:
        return Finding(f"{what}: {error}", False, "start the api-server or correct its URL")
    if error.status == 401 or (error.what == "log in" and error.status in (400, 403)):
        fix = "check the user and its password (the connection's, or $AIRFLOW_QUOTA_API_PASSWORD)"
        return Finding(f"{what}: the login is refused ({error})", False, fix)
    if error.status == 403:
        return Finding(
            f"{what}: refused ({error})", False, f"give the user the role: {ROLE_ADVICE}"
        )
    if error.status >= 500:
        return Finding(f"{what}: Airflow failed ({error})", False, INSTALLATION_ADVICE)
    return Finding(f"{what}: Airflow refused ({error})", False, "see Airflow's answer")


def _read_pools(gateway: AirflowGateway) -> None:
    gateway.rest.call("list pools", "GET", path("pools"), query={"limit": 1})


def _pool_body() -> dict[str, object]:
    return {"pool": PROBE, "slots": 0, "description": PROBE, "include_deferred": True}


def _may(gateway: AirflowGateway, method: str, route: str, body: dict[str, object]) -> None:
    """``method route`` answers 404 (allowed, nothing there): anything else raises."""
    try:
        gateway.rest.call(f"{method} {route}", method, route, body=body)
    except GatewayError as error:
        if error.status == 404:
            return
        raise
    raise GatewayError(f"{method} {route}", f"{PROBE} exists in Airflow: remove it", 409)


def _may_clear(gateway: AirflowGateway) -> None:
    body = {"dry_run": True, "task_ids": [PROBE], "only_failed": False}
    _may(gateway, "POST", path("dags", PROBE, "clearTaskInstances"), body)


def _write_variable(gateway: AirflowGateway) -> None:
    key = f"{PROBE}-{os.getpid()}"
    text = "written and deleted by airflow-quota doctor"
    gateway.set_variable(key, text, text)
    try:
        if gateway.variable(key) != text:
            raise GatewayError(f"read Variable {key}", "it does not hold what was written", 500)
    finally:
        gateway.rest.call(f"delete Variable {key}", "DELETE", path("variables", key))
