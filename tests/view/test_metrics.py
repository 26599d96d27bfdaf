"""Metrics through Airflow's Stats, received by a StatsD listener over real UDP."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from airflow_quota_provider import metrics
from airflow_quota_provider.hooks.batch import BatchQuotaHook
from airflow_quota_provider.view.api import create_app
from airflow_quota_provider.view.backend import BatchBackend
from airflow_quota_provider.view.plugin import backend_from_config
from tests.airflow.test_operator import run_task
from tests.emulator.conftest import QUEUE, Endpoint
from tests.view.conftest import Story


class StatsdListener:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.lines: list[str] = []

    def received(self) -> list[str]:
        """Every line received so far (waits briefly for the datagrams in flight)."""
        self.sock.settimeout(0.3)
        try:
            while True:
                self.lines += self.sock.recv(65536).decode().splitlines()
        except TimeoutError:
            pass
        return self.lines


@pytest.fixture
def statsd(monkeypatch: pytest.MonkeyPatch) -> Iterator[StatsdListener]:
    """Airflow's Stats sending StatsD to a socket this test reads."""
    from airflow.sdk.observability import stats
    from airflow.sdk.observability.metrics.stats_utils import get_stats_factory

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    monkeypatch.setenv("AIRFLOW__METRICS__STATSD_ON", "True")
    monkeypatch.setenv("AIRFLOW__METRICS__STATSD_HOST", "127.0.0.1")
    monkeypatch.setenv("AIRFLOW__METRICS__STATSD_PORT", str(sock.getsockname()[1]))
    monkeypatch.setenv("AIRFLOW__METRICS__STATSD_PREFIX", "airflow")
    stats.initialize(factory=get_stats_factory(), export_legacy_names=False)
    yield StatsdListener(sock)
    monkeypatch.undo()
    stats.initialize(factory=get_stats_factory(), export_legacy_names=False)
    sock.close()


@pytest.mark.usefixtures("aws_env")
def test_a_queue_read_sets_each_shares_gauges(statsd: StatsdListener, story: Story) -> None:
    BatchBackend(BatchQuotaHook(aws_conn_id=None)).queue(QUEUE)
    lines = set(statsd.received())
    base = "airflow.quota_provider.share.ml-training"
    assert {
        f"{base}.nlp.ml_g5_12xlarge.used:2|g",
        f"{base}.nlp.ml_g5_12xlarge.borrowed:2|g",
        f"{base}.nlp.ml_p4d_24xlarge.used:2|g",
        f"{base}.vision.ml_g5_12xlarge.lent:2|g",
        f"{base}.vision.ml_p4d_24xlarge.used:2|g",
        f"{base}.vision.ml_p4d_24xlarge.waiting:2|g",
        f"{base}.nlp.ml_p4d_24xlarge.waiting:0|g",
    } <= lines
    assert len([line for line in lines if line.startswith(base)]) == 2 * 2 * 4


@pytest.mark.usefixtures("airflow_db")
def test_the_operator_counts_submissions_and_failures(
    statsd: StatsdListener, running_endpoint: Endpoint
) -> None:
    tags = {"emulator:duration-seconds": "600", "emulator:fail-after-seconds": "5"}
    state, _ = run_task("counted", deferrable=False, tags=tags)
    assert state == "failed"
    counted = [line for line in statsd.received() if line.startswith("airflow.quota_provider.")]
    assert counted == [
        "airflow.quota_provider.ml-training.nlp.submissions:1|c",
        "airflow.quota_provider.ml-training.nlp.failures:1|c",
    ]


def test_preemptions_are_counted_by_the_number_seen(statsd: StatsdListener) -> None:
    metrics.count("preemptions", f"arn:aws:batch:us-east-1:1:job-queue/{QUEUE}", "nlp", by=2)
    metrics.count("preemptions", QUEUE, "nlp", by=0)
    assert statsd.received() == ["airflow.quota_provider.ml-training.nlp.preemptions:2|c"]


def test_an_unknown_counter_is_refused() -> None:
    with pytest.raises(
        ValueError,
        match="counter must be one of submissions, preemptions, failures, unadmitted_starts, "
        "got 'retries'",
    ):
        metrics.count("retries", QUEUE, "nlp")


@pytest.mark.usefixtures("aws_env")
def test_the_app_reads_every_queue_while_it_runs(statsd: StatsdListener, story: Story) -> None:
    from airflow.api_fastapi.core_api.security import get_user

    app = create_app(backend_from_config, get_user, sample_every=0.2)
    wanted = "airflow.quota_provider.share.ml-training.vision.ml_p4d_24xlarge.waiting:2|g"
    with TestClient(app):
        deadline = time.monotonic() + 20
        while wanted not in statsd.received() and time.monotonic() < deadline:
            pass
    assert wanted in statsd.lines
    assert app.state.backend is not None


@pytest.mark.usefixtures("aws_env")
def test_a_failing_read_is_logged_and_the_next_round_tried(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from airflow.api_fastapi.core_api.security import get_user

    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    app = create_app(backend_from_config, get_user, sample_every=0.1)
    message = "GPU Quotas: reading the job queues failed"
    with TestClient(app), caplog.at_level("WARNING"):
        deadline = time.monotonic() + 20
        while caplog.text.count(message) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert caplog.text.count(message) >= 2
