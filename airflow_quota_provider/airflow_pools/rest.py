"""One api-server of Airflow 3, as one user: JSON over HTTP, logged in, errors named.

Airflow's REST API v2 is spoken here directly (``urllib3`` and JSON), not through
the generated ``apache-airflow-client``: each client release models one Airflow
release's bodies and refuses or drops what another release sends or expects
(client 3.3 sends a clear's ``note``, which a 3.1 or 3.2 api-server refuses with
422 ``extra_forbidden``; client 3.1 cannot read a 3.3 task instance in
``awaiting_input``). What a request carries is chosen by
:class:`~airflow_quota_provider.airflow_pools.gateway.AirflowGateway` from the
server's own version, and answers are read field by field.

Logging in (``POST /auth/token``) gives a JWT without a refresh token: the session
logs in again when it has less than :data:`RENEW_BEFORE_SECONDS` left, or once when
a call answers 401.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import quote, urlencode

import urllib3

RENEW_BEFORE_SECONDS = 300.0
"""Log in again when the token has less than this left."""


LOGIN_ADVICE = (
    "check the user and its password (the connection's login and password, or --username "
    "with $AIRFLOW_QUOTA_API_PASSWORD)"
)
ROLE_ADVICE = "reading needs Airflow's Viewer role, changing pools and tasks its Op role"
DOCTOR_ADVICE = (
    "`airflow-quota doctor --config CONFIG`, run where the api-server runs, names what in an "
    "installation breaks Airflow"
)


class GatewayError(RuntimeError):
    """Airflow could not be reached or refused a call; ``status`` is the HTTP status, if any.

    :param what: the call, in words (``clear d/r/t``).
    :param detail: what went wrong, with Airflow's answer.
    :param status: the HTTP status Airflow answered, if it answered.
    """

    def __init__(self, what: str, detail: str, status: int | None = None) -> None:
        super().__init__(f"{what}: {detail}")
        self.what = what
        self.detail = detail
        self.status = status

    def kind_and_cause(self) -> str:
        """What failed, named for what it is, with Airflow's answer."""
        if self.status is None:
            return f"cannot reach Airflow ({self})"
        if self.status == 401 or (self.what == "log in" and self.status in (400, 403)):
            return f"Airflow refuses the manager's login ({self}): {LOGIN_ADVICE}"
        if self.status == 403:
            return f"Airflow does not allow the manager's user this ({self}): {ROLE_ADVICE}"
        if self.status >= 500:
            return f"Airflow failed ({self}): {DOCTOR_ADVICE}"
        return f"Airflow refused ({self})"

    @property
    def refused(self) -> bool:
        """Airflow answered and refused the call itself (a 4xx other than 401): asking again
        gets the same answer. A 401 is about the login, which is renewed."""
        return self.status is not None and 400 <= self.status < 500 and self.status != 401


@dataclass(frozen=True)
class Credentials:
    """An Airflow user the manager acts as (never logged, never shown)."""

    username: str
    password: str = ""

    def __repr__(self) -> str:
        return f"Credentials(username={self.username!r}, password=***)"


def path(*segments: str | int) -> str:
    """``/api/v2/...`` with each segment quoted whole (run ids hold ``:`` and ``+``)."""
    return "/api/v2/" + "/".join(quote(str(segment), safe="") for segment in segments)


class RestSession:
    """Calls to one api-server as one user; counts them (logins included)."""

    def __init__(
        self,
        base_url: str,
        credentials: Credentials,
        *,
        timeout: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.credentials = credentials
        self.timeout = timeout
        self.clock = clock
        self.calls = 0
        # no retries below: the manager's loop retries with its own growing delay
        self._http = urllib3.PoolManager(maxsize=8, retries=False)
        self._token = ""
        self._expires = 0.0
        self._lock = threading.Lock()

    def call(
        self,
        what: str,
        method: str,
        route: str,
        *,
        body: Mapping[str, Any] | None = None,
        query: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> Any:
        """Airflow's JSON answer to ``method route``; :class:`GatewayError` naming ``what``
        if it cannot be reached, refuses, or answers what is not JSON."""
        return self.call_dated(what, method, route, body=body, query=query, timeout=timeout)[0]

    def call_dated(
        self,
        what: str,
        method: str,
        route: str,
        *,
        body: Mapping[str, Any] | None = None,
        query: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> tuple[Any, float | None]:
        """As :meth:`call`, with the api-server's own time of the answer (its HTTP ``Date``,
        seconds since the epoch, ``None`` if it sent none): Airflow stamps its rows with the
        clocks of its own hosts, not the manager's.

        ``timeout`` (default: the session's) bounds the whole call: a login it needs and a
        second try after a 401 come out of the same seconds."""
        budget = _Budget(self.timeout if timeout is None else timeout)
        token = self._authorized(what, budget)
        answer = self._send(what, method, route, body, query, budget, token)
        if answer.status == 401:  # the token was revoked or the clock is off: once more
            with self._lock:
                self._expires = 0.0
            token = self._authorized(what, budget)
            answer = self._send(what, method, route, body, query, budget, token)
        if answer.status >= 300:
            raise GatewayError(what, _detail(answer), answer.status)
        date = _date(answer.headers.get("Date"))
        if answer.status == 204 or not answer.data:
            return None, date
        try:
            return json.loads(answer.data), date
        except ValueError:
            raise GatewayError(what, self._unreadable(answer.data[:200])) from None

    def unreadable(self, what: str, error: Exception) -> GatewayError:
        """The error for an answer whose fields are not what Airflow's API documents."""
        return GatewayError(what, self._unreadable(error))

    def _unreadable(self, found: object) -> str:
        return f"Airflow's API at {self.base_url} answered what cannot be read: {found!r:.300}"

    def _send(
        self,
        what: str,
        method: str,
        route: str,
        body: Mapping[str, Any] | None,
        query: Mapping[str, Any] | None,
        budget: _Budget,
        token: str,
    ) -> urllib3.BaseHTTPResponse:
        with self._lock:
            self.calls += 1
        url = self.base_url + route
        if query:
            url += "?" + urlencode(query, doseq=True)
        try:
            return self._http.request(
                method,
                url,
                json=body,
                headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
                timeout=budget.left(what),
            )
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise GatewayError(what, self._unreachable(error)) from None

    def _unreachable(self, error: Exception) -> str:
        return f"Airflow's API at {self.base_url} is unreachable ({error})"

    def _authorized(self, what: str, budget: _Budget) -> str:
        with self._lock:
            if self.clock() <= self._expires - RENEW_BEFORE_SECONDS:
                return self._token
        return self._login(budget.left(what))

    def _login(self, timeout: urllib3.Timeout) -> str:
        with self._lock:
            self.calls += 1
        body = {"username": self.credentials.username, "password": self.credentials.password}
        try:
            answer = self._http.request(
                "POST", f"{self.base_url}/auth/token", json=body, timeout=timeout
            )
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise GatewayError("log in", self._unreachable(error)) from None
        if answer.status == 404:
            detail = (
                f"{self.base_url} has no POST /auth/token: the pool manager needs Airflow 3's "
                "API server (Airflow 2's webserver has neither it nor /api/v2)"
            )
            raise GatewayError("log in", detail, answer.status)
        if answer.status >= 300:
            detail = f"answered {answer.status} for user {self.credentials.username}"
            raise GatewayError("log in", detail, answer.status)
        try:
            token = str(json.loads(answer.data)["access_token"])
        except (ValueError, KeyError, TypeError):
            raise GatewayError("log in", self._unreadable(answer.data[:200])) from None
        with self._lock:
            self._token = token
            self._expires = _expiry(token, default=self.clock() + 3600)
        return token


class _Budget:
    """The seconds one call may take in all, from its start, on the monotonic clock."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ends = time.monotonic() + seconds

    def left(self, what: str) -> urllib3.Timeout:
        """What one request of the call may take (connecting and reading together);
        :class:`GatewayError` if nothing is left."""
        left = self.ends - time.monotonic()
        if left <= 0:
            detail = f"not sent: the {self.seconds:g} s it was given ran out before it"
            raise GatewayError(what, detail)
        return urllib3.Timeout(total=left)


def _expiry(token: str, default: float) -> float:
    """The ``exp`` claim of a JWT (read, not verified: the api-server verifies it)."""
    try:
        payload = token.split(".")[1]
        claims: Mapping[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=="))
        return float(claims["exp"])
    except (IndexError, KeyError, TypeError, ValueError):
        return default


def _date(header: str | None) -> float | None:
    """An HTTP ``Date`` header as seconds since the epoch (``None`` if absent or unreadable)."""
    if not header:
        return None
    try:
        return parsedate_to_datetime(header).timestamp()
    except (TypeError, ValueError, IndexError):
        return None


def _detail(answer: urllib3.BaseHTTPResponse) -> str:
    text = answer.data.decode("utf-8", "replace")
    try:
        detail = json.loads(text).get("detail", text)
    except (ValueError, AttributeError):
        detail = text
    return f"answered {answer.status} {answer.reason}: {str(detail)[:300]}"
