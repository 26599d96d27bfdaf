"""How each share shares, as the view, its API and ``airflow-quota status`` say it.

Only LEND_AND_BORROW shares borrow, so only they have a borrow limit; a LEND or
RESERVE share "does not borrow" (AWS reports no ``borrowLimit`` for it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from airflow_quota_provider.cli import main
from airflow_quota_provider.core.model import QueueConfig, Share, Sharing
from airflow_quota_provider.hooks.batch import BatchQuotaHook
from airflow_quota_provider.view.backend import BatchBackend
from airflow_quota_provider.view.text import Style, status_lines
from tests.emulator.conftest import P4D, QUEUE, Endpoint, serve
from tests.view.conftest import PASSWORD, USER

EVERY_SHARING = QueueConfig(
    job_queue=QUEUE,
    capacity={P4D: 8},
    shares=(
        Share("nlp", {P4D: 2}, Sharing.LEND_AND_BORROW, borrow_limit=50),
        Share("vision", {P4D: 2}, Sharing.LEND_AND_BORROW),
        Share("eval", {P4D: 2}, Sharing.LEND),
        Share("audit", {P4D: 2}, Sharing.RESERVE),
    ),
)

EXPECTED = {
    "nlp": (50, "borrow limit 50%"),
    "vision": (-1, "borrow limit unlimited"),
    "eval": (None, "does not borrow"),
    "audit": (None, "does not borrow"),
}


@pytest.fixture
def endpoint(aws_env: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Endpoint]:
    """A queue with a share of each kind; the view's app reads it through AWS_ENDPOINT_URL."""
    for found in serve(EVERY_SHARING):
        monkeypatch.setenv("AWS_ENDPOINT_URL", found.url)
        yield found


def test_the_view_model_says_which_shares_borrow(endpoint: Endpoint) -> None:
    view = BatchBackend(BatchQuotaHook(aws_conn_id=None)).queue(QUEUE)
    found = {s.name: (s.borrow_limit, s.borrowing) for s in view.shares}
    assert found == EXPECTED
    heads = [line for line in status_lines(view, Style()) if line.startswith("share ")]
    assert heads == [  # AWS lists shares by name
        "share audit: RESERVE, does not borrow, ENABLED; 0 running, 0 waiting",
        "share eval: LEND, does not borrow, ENABLED; 0 running, 0 waiting",
        "share nlp: LEND_AND_BORROW, borrow limit 50%, ENABLED; 0 running, 0 waiting",
        "share vision: LEND_AND_BORROW, borrow limit unlimited, ENABLED; 0 running, 0 waiting",
    ]


def test_status_prints_it(endpoint: Endpoint, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "--job-queue", QUEUE]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "share eval: LEND, does not borrow, ENABLED; 0 running, 0 waiting" in out
    assert "share audit: RESERVE, does not borrow, ENABLED; 0 running, 0 waiting" in out
    assert not [line for line in out if "unlimited" in line and "LEND_AND_BORROW" not in line]


def test_the_api_answers_it(quota_app: Any) -> None:
    client = TestClient(quota_app)
    answer = client.post("/auth/token", json={"username": USER, "password": PASSWORD})
    client.headers["Authorization"] = f"Bearer {answer.json()['access_token']}"
    shares = client.get(f"/quota/api/v1/queues/{QUEUE}/shares").json()
    assert {s["name"]: (s["borrow_limit"], s["borrowing"]) for s in shares} == EXPECTED
    script = client.get("/quota/static/app.js").text
    assert "share.borrowing" in script and "borrow_limit" not in script
