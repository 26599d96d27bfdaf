"""The GPU Quotas API through Airflow's own API server app, the plugin loaded by Airflow."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from airflow_quota_provider.versions import airflow_at_least
from tests.emulator.conftest import G5, P4D, QUEUE, Endpoint, submit
from tests.view.conftest import PASSWORD, USER, Story

pytestmark = pytest.mark.usefixtures("aws_env")

PAGE = [
    "/quota/",
    "/quota/static/app.js",
    "/quota/static/app.css",
    "/quota/static/history.js",
    "/quota/static/vendor/uPlot.iife.min.js",
]
"""The page and its static files: no data, no login (Airflow 3.0's UI has no session
cookie a page request would carry)."""
ROUTES = [
    "/quota/openapi.json",
    "/quota/api/v1/queues",
    f"/quota/api/v1/queues/{QUEUE}",
    f"/quota/api/v1/queues/{QUEUE}/shares",
    f"/quota/api/v1/queues/{QUEUE}/jobs",
    f"/quota/api/v1/queues/{QUEUE}/events",
    f"/quota/api/v1/queues/{QUEUE}/history",
    f"/quota/api/v1/queues/{QUEUE}/usage?format=csv",
    "/quota/api/v1/jobs/some-job",
]


@pytest.fixture
def client(quota_app: Any) -> TestClient:
    return TestClient(quota_app)


@pytest.fixture
def token(client: TestClient) -> str:
    answer = client.post("/auth/token", json={"username": USER, "password": PASSWORD})
    assert answer.status_code == 201, answer.text
    value: str = answer.json()["access_token"]
    return value


@pytest.fixture
def authed(client: TestClient, token: str) -> TestClient:
    client.headers["Authorization"] = f"Bearer {token}"
    return client


@pytest.mark.parametrize("route", ROUTES)
def test_every_route_needs_an_airflow_user(client: TestClient, route: str) -> None:
    answer = client.get(route)
    assert answer.status_code == 401, (route, answer.text)
    assert answer.json() == {"detail": "Not authenticated"}


@pytest.mark.parametrize("route", ROUTES)
def test_a_user_the_auth_manager_does_not_let_read_the_view_is_refused(
    client: TestClient, route: str
) -> None:
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    # SimpleAuthManager lets every role read custom views; a user without a role none
    token = get_auth_manager().generate_jwt(SimpleAuthManagerUser(username="no-role", role=None))
    answer = client.get(route, headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 403, (route, answer.text)
    assert answer.json()["detail"] == (
        "user 'no-role' may not read GPU Quotas: it needs GET on the custom view 'GPU Quotas' "
        "of Airflow's auth manager (with FAB, the permission 'can read on GPU Quotas')"
    )


def test_a_forged_token_is_refused(client: TestClient) -> None:
    answer = client.get("/quota/api/v1/queues", headers={"Authorization": "Bearer not.a.jwt"})
    assert answer.status_code == 403


@pytest.mark.parametrize("route", PAGE)
def test_the_page_and_its_files_need_no_login(client: TestClient, route: str) -> None:
    answer = client.get(route)
    assert answer.status_code == 200, (route, answer.text)
    assert QUEUE not in answer.text  # data comes only from the API, with a login


@pytest.mark.skipif(
    not airflow_at_least("3.1"), reason="Airflow 3.0's API reads only the Authorization header"
)
def test_the_ui_session_cookie_is_accepted(
    client: TestClient, token: str, endpoint: Endpoint
) -> None:
    client.cookies.set("_token", token)
    answer = client.get("/quota/api/v1/queues")
    assert answer.status_code == 200, answer.text
    assert [q["name"] for q in answer.json()] == [QUEUE]


def test_the_page_and_its_assets(authed: TestClient) -> None:
    page = authed.get("/quota/")
    assert page.status_code == 200
    assert "GPU Quotas" in page.text and 'src="static/app.js"' in page.text
    assert authed.get("/quota/static/app.css").headers["content-type"].startswith("text/css")
    missing = authed.get("/quota/static/secrets.txt")
    assert missing.status_code == 404
    assert missing.json()["detail"] == (
        "no static file 'secrets.txt'; there are app.js, app.css, history.js, "
        "vendor/uPlot.iife.min.js, vendor/uPlot.min.css"
    )
    assert authed.get("/quota/static/../api.py").status_code == 404
    vendored = authed.get("/quota/static/vendor/uPlot.iife.min.js")
    assert vendored.status_code == 200 and "uPlot" in vendored.text


def test_shares_show_owning_borrowing_and_lending(authed: TestClient, story: Story) -> None:
    shares = {s["name"]: s for s in authed.get(f"/quota/api/v1/queues/{QUEUE}/shares").json()}
    nlp = {u["unit"]: u for u in shares["nlp"]["units"]}
    vision = {u["unit"]: u for u in shares["vision"]["units"]}
    assert nlp[P4D] == {
        "unit": P4D,
        "owned": 2,
        "used": 2,
        "own_use": 2,
        "borrowed": 0,
        "lent": 0,
        "idle": 0,
        "limit": 4,
    }
    assert nlp[G5] == {
        "unit": G5,
        "owned": 0,
        "used": 2,
        "own_use": 0,
        "borrowed": 2,
        "lent": 0,
        "idle": 0,
        "limit": 4,
    }
    assert vision[G5] == {
        "unit": G5,
        "owned": 4,
        "used": 0,
        "own_use": 0,
        "borrowed": 0,
        "lent": 2,
        "idle": 2,
        "limit": 4,
    }
    assert (shares["vision"]["running"], shares["vision"]["waiting"]) == (1, 1)
    assert shares["vision"]["waiting_instances"] == {P4D: 2}


def test_waiting_job_with_its_reason_and_task_link(authed: TestClient, story: Story) -> None:
    waiting = authed.get(f"/quota/api/v1/queues/{QUEUE}/jobs", params={"state": "waiting"}).json()
    assert [job["job_id"] for job in waiting] == [story.v2]
    job = waiting[0]
    assert job["position"] == 1 and job["priority"] == 0 and job["preemptions"] == 1
    assert job["reason_code"] == "NO_IDLE_CAPACITY"
    assert job["reason"].startswith("vision needs 2 ml.p4d.24xlarge")
    assert job["task"]["path"] == (
        "dags/nlp_%3Cfinetune%3E/runs/manual__%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E"
        "/tasks/train"
    )
    assert job["console_url"] == (
        f"https://console.aws.amazon.com/batch/home?region=us-east-1#service-jobs/detail/{story.v2}"
    )


def test_running_jobs_borrowing_and_next_victims(authed: TestClient, story: Story) -> None:
    running = authed.get(f"/quota/api/v1/queues/{QUEUE}/jobs", params={"state": "running"}).json()
    by_id = {job["job_id"]: job for job in running}
    assert set(by_id) == {story.v1, story.n1, story.n2}
    assert [j for j, job in by_id.items() if job["borrowing"]] == [story.n2]
    assert by_id[story.n1]["priority"] == 7
    assert by_id[story.n2]["next_victim"] == {
        "by_share": "vision",
        "kind": "RECLAIM",
        "message": f"share nlp borrows 2 {G5} (uses 2, owns 0); share vision reclaims it for "
        f"job reclaim-by-vision, which needs 4 {G5} within what its share owns",
    }
    assert by_id[story.v1]["next_victim"] is None
    borrowing = authed.get(
        f"/quota/api/v1/queues/{QUEUE}/jobs", params={"borrowing": "true", "share": "nlp"}
    ).json()
    assert [job["job_id"] for job in borrowing] == [story.n2]


def test_preemption_events(authed: TestClient, story: Story) -> None:
    events = authed.get(f"/quota/api/v1/queues/{QUEUE}/events").json()
    assert len(events) == 1
    event = events[0]
    assert (event["job_id"], event["share"], event["kind"], event["preemptor"]) == (
        story.v2,
        "vision",
        "RECLAIM",
        story.n1,
    )
    assert (event["preemptor_name"], event["preemptor_share"]) == ("n1", "nlp")
    assert event["checkpointed"] is True
    ran = (event["stopped_at"] - event["started_at"]) / 1000
    assert event["work_lost"] == pytest.approx((ran % 250) * 2)
    assert event["work_lost_unit"] == "instance"
    assert event["task"]["dag_id"] == "nlp_<finetune>"


def test_a_job_queue_says_what_it_is_and_has_its_utilization(
    authed: TestClient, story: Story
) -> None:
    assert [(q["name"], q["kind"]) for q in authed.get("/quota/api/v1/queues").json()] == [
        (QUEUE, "job queue")
    ]
    overview = authed.get(f"/quota/api/v1/queues/{QUEUE}").json()
    assert overview["kind"] == "job queue" and len(overview["utilization"]) == 24


def test_explanation_of_a_waiting_job(authed: TestClient, story: Story) -> None:
    found = authed.get(f"/quota/api/v1/jobs/{story.v2}").json()
    assert found["summary"].startswith(
        f"{story.v2} waits for 2 {P4D} in share vision: NO_IDLE_CAPACITY: vision needs 2"
    )
    assert "position 1 of the queue's dispatch order, waiting" in found["details"][1]
    assert [e["preemptor"] for e in found["preemptions"]] == [story.n1]


def test_unknown_queue_and_job_are_404_with_what_exists(authed: TestClient, story: Story) -> None:
    queue = authed.get("/quota/api/v1/queues/nope/shares")
    assert queue.status_code == 404
    assert queue.json() == {
        "detail": f"job queue 'nope' does not exist; the job queues are: {QUEUE}"
    }
    job = authed.get("/quota/api/v1/jobs/no-such-job")
    assert job.status_code == 404
    assert job.json() == {
        "detail": f"service job 'no-such-job' does not exist: no job of job queue {QUEUE} "
        "has that id, ARN or name"
    }


def test_a_job_by_its_arn_or_name_and_an_ambiguous_name(
    authed: TestClient, story: Story, endpoint: Endpoint
) -> None:
    arn = f"arn:aws:batch:us-east-1:123456789012:service-job/{story.v2}"
    for reference in (arn, "v2"):
        found = authed.get(f"/quota/api/v1/jobs/{reference}")
        assert (found.status_code, found.json()["job"]["job_id"]) == (200, story.v2)
    twin = submit(endpoint.batch, "nlp", 1, name="v2")
    answer = authed.get("/quota/api/v1/jobs/v2")
    assert answer.status_code == 409
    assert answer.json() == {
        "detail": "2 service jobs are named 'v2'; give the id (or ARN) of one: "
        f"{twin} (SUBMITTED, job queue {QUEUE}); {story.v2} (RUNNABLE, job queue {QUEUE})"
    }


def test_bad_filter_names_the_field(authed: TestClient, story: Story) -> None:
    answer = authed.get(f"/quota/api/v1/queues/{QUEUE}/jobs", params={"state": "sleeping"})
    assert answer.status_code == 422
    problem = answer.json()["detail"][0]
    assert problem["loc"] == ["query", "state"]
    assert "'waiting', 'running' or 'all'" in problem["msg"]


def test_a_page_load_reads_aws_once_per_ttl(
    authed: TestClient, story: Story, endpoint: Endpoint
) -> None:
    def calls() -> dict[str, int]:
        ops = endpoint.stats()["operations"]
        return {op: sum(n.values()) for op, n in ops.items() if op != "batch.SubmitServiceJob"}

    before = calls()
    page_load = [
        "queues",
        f"queues/{QUEUE}",
        f"queues/{QUEUE}/shares",
        f"queues/{QUEUE}/jobs?state=waiting",
        f"queues/{QUEUE}/jobs?state=running",
        f"queues/{QUEUE}/events?limit=50",
        f"jobs/{story.v2}",
    ]
    for _ in range(3):
        for route in page_load:
            assert authed.get(f"/quota/api/v1/{route}").status_code == 200
    spent = {op: n - before.get(op, 0) for op, n in calls().items() if n != before.get(op, 0)}
    # one read of the queue: 4 jobs, all described (3 hold capacity, 1 is first in line)
    assert spent == {
        "batch.DescribeJobQueues": 2,  # the queue list and the queue
        "batch.DescribeServiceEnvironments": 1,
        "batch.ListQuotaShares": 1,
        "batch.GetJobQueueSnapshot": 1,
        "batch.ListServiceJobs": 5,
        "batch.DescribeServiceJob": 4,
    }


def test_openapi_documents_the_api(authed: TestClient) -> None:
    schema = authed.get("/quota/openapi.json").json()
    assert set(schema["paths"]) == {
        "/api/v1/queues",
        "/api/v1/queues/{queue}",
        "/api/v1/queues/{queue}/shares",
        "/api/v1/queues/{queue}/jobs",
        "/api/v1/queues/{queue}/events",
        "/api/v1/queues/{queue}/history",
        "/api/v1/queues/{queue}/usage",
        "/api/v1/jobs/{job_id}",
    }
    assert {"JobView", "HistoryChart", "UsageAnswer"} <= set(schema["components"]["schemas"])


def test_a_failed_aws_call_is_a_502_naming_it(
    authed: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    answer = authed.get("/quota/api/v1/queues")
    assert answer.status_code == 502
    assert answer.json()["detail"].startswith(
        "DescribeJobQueues failed (EndpointConnectionError): Could not connect"
    )
