"""What a share of a pools fleet could start now, and how the capacity sensor and its trigger
pick their fleet: tables, and each bad parameter with its message word for word."""

from __future__ import annotations

from pathlib import Path

import pytest
from airflow.providers.common.compat.sdk import AirflowNotFoundException

from airflow_quota_provider.airflow_pools.headroom import PoolsHeadroom, fleet_headroom, pools_fleet
from airflow_quota_provider.airflow_pools.tasks import PoolTask, TaskState
from airflow_quota_provider.exceptions import ConfigError
from airflow_quota_provider.headroom import BatchHeadroom, backend_of, headroom_source
from airflow_quota_provider.sensors.capacity import QuotaCapacitySensor
from airflow_quota_provider.triggers.capacity import QuotaCapacityTrigger
from tests.pool_manager.test_decide import FLEET, NLP, RESTARTING, RUNNING, VISION, task

HERE = Path(__file__).resolve().parent
FLEET_FILE = str(HERE / "fleet.yaml")
NEITHER_OR_BOTH = (
    "give exactly one of job_queue (an AWS Batch job queue) and fleet_config (the path of a "
    "quota config with backend: airflow_pools); "
)

# FLEET: nlp owns 8 gpu, vision 8 (borrows up to 100 % more), eval 0; 16 in all
HEADROOM_CASES: list[tuple[str, list[PoolTask], str, dict[str, int]]] = [
    ("nothing runs: its own 8 and the 8 vision lends", [], "nlp", {"gpu": 16}),
    (
        "vision borrows 4 of nlp's: nlp could start its other 4",
        [task("v", VISION, 12, RUNNING)],
        "nlp",
        {"gpu": 4},
    ),
    (
        "a deferred task keeps its slots",
        [task("v", VISION, 12, TaskState.DEFERRED)],
        "nlp",
        {"gpu": 4},
    ),
    (
        "a queued task holds its slots",
        [task("v", VISION, 12, TaskState.QUEUED)],
        "nlp",
        {"gpu": 4},
    ),
    (
        "a cleared task holds them until its process is gone",
        [task("v", VISION, 12, RESTARTING)],
        "nlp",
        {"gpu": 4},
    ),
    ("a scheduled task holds nothing", [task("v", VISION, 12)], "nlp", {"gpu": 16}),
    (
        "a pool outside the fleet does not count",
        [task("other", "default_pool", 12, RUNNING)],
        "nlp",
        {"gpu": 16},
    ),
    (
        "every gpu taken, own and lendable",
        [task("n", NLP, 8, RUNNING), task("v", VISION, 8, RUNNING)],
        "nlp",
        {"gpu": 0},
    ),
    (
        "the borrower's view: what nlp leaves idle",
        [task("n", NLP, 2, RUNNING), task("v", VISION, 12, RUNNING)],
        "vision",
        {"gpu": 2},
    ),
    ("a share the fleet does not have", [], "robotics", {}),
]


@pytest.mark.parametrize(
    ("tasks", "share", "expected"),
    [c[1:] for c in HEADROOM_CASES],
    ids=[c[0] for c in HEADROOM_CASES],
)
def test_fleet_headroom(tasks: list[PoolTask], share: str, expected: dict[str, int]) -> None:
    assert fleet_headroom(FLEET, tasks, share, now=1_000.0) == expected


@pytest.mark.parametrize(
    ("job_queue", "fleet_config", "expected"),
    [
        ("ml-training", None, "aws_batch"),
        (None, "/etc/quota.yaml", "airflow_pools"),
        ("", "/etc/quota.yaml", "airflow_pools"),
        (
            None,
            None,
            NEITHER_OR_BOTH + "got neither (and [quota_provider] view_fleet_config is not set)",
        ),
        (
            "ml-training",
            "/etc/quota.yaml",
            NEITHER_OR_BOTH + "got both job_queue='ml-training' and fleet_config='/etc/quota.yaml'",
        ),
    ],
    ids=["a job queue", "a fleet config", "an empty job queue", "neither", "both"],
)
def test_exactly_one_fleet_is_named(
    job_queue: str | None, fleet_config: str | None, expected: str
) -> None:
    if expected in ("aws_batch", "airflow_pools"):
        assert backend_of(job_queue, fleet_config).value == expected
        return
    with pytest.raises(ValueError) as raised:
        backend_of(job_queue, fleet_config)
    assert str(raised.value) == expected


def test_the_sensor_refuses_neither_or_both_fleets_when_the_dag_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AIRFLOW__QUOTA_PROVIDER__VIEW_FLEET_CONFIG", raising=False)
    with pytest.raises(ValueError, match="got neither"):
        QuotaCapacitySensor(task_id="wait", quota_share="nlp", capacity={"gpu": 2})
    with pytest.raises(ValueError, match="got both"):
        QuotaCapacitySensor(
            task_id="wait",
            quota_share="nlp",
            capacity={"gpu": 2},
            job_queue="ml-training",
            fleet_config=FLEET_FILE,
        )


def test_the_sensor_reads_the_fleet_of_the_gpu_quotas_page_when_it_names_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AIRFLOW__QUOTA_PROVIDER__VIEW_FLEET_CONFIG", FLEET_FILE)
    sensor = QuotaCapacitySensor(task_id="wait", quota_share="nlp", capacity={"gpu": 2})
    assert (sensor.job_queue, sensor.fleet_config) == (None, FLEET_FILE)
    assert sensor.source.serialize() == {
        "fleet_config": FLEET_FILE,
        "airflow_api_conn_id": "airflow_api_default",
    }
    assert sensor.source.config().job_queue == "gpus"
    # a job queue wins over the page's fleet
    batch = QuotaCapacitySensor(
        task_id="train", quota_share="nlp", capacity={"gpu": 2}, job_queue="ml-training"
    )
    assert (batch.job_queue, batch.fleet_config) == ("ml-training", None)
    assert isinstance(batch.source, BatchHeadroom)


@pytest.mark.parametrize(
    "source",
    [
        {"fleet_config": FLEET_FILE, "airflow_api_conn_id": "quota_api"},
        {
            "job_queue": "ml-training",
            "aws_conn_id": "aws_quota",
            "region_name": "us-east-1",
            "verify": False,
            "botocore_config": {"retries": {"max_attempts": 3}},
        },
    ],
    ids=["pools fleet", "aws batch"],
)
def test_the_trigger_serializes_its_source_parameters_and_nothing_else(
    source: dict[str, object],
) -> None:
    trigger = QuotaCapacityTrigger(
        quota_share="nlp",
        capacity={"gpu": 2},
        poll_interval=5,
        **source,  # type: ignore[arg-type]
    )
    classpath, kwargs = trigger.serialize()
    assert classpath == "airflow_quota_provider.triggers.capacity.QuotaCapacityTrigger"
    assert kwargs == {"quota_share": "nlp", "capacity": {"gpu": 2}, "poll_interval": 5, **source}
    assert QuotaCapacityTrigger(**kwargs).serialize() == (classpath, kwargs)


def test_a_trigger_naming_no_fleet_is_refused() -> None:
    with pytest.raises(ValueError, match="got neither"):
        QuotaCapacityTrigger(quota_share="nlp", capacity={"gpu": 2})


def test_a_config_for_aws_batch_is_no_pools_fleet(tmp_path: Path) -> None:
    path = tmp_path / "batch.yaml"
    path.write_text(
        "job_queue: ml-training\ncapacity: {gpu: 4}\nshares: [{name: nlp, capacity: {gpu: 2}}]\n"
    )
    with pytest.raises(ConfigError) as raised:
        pools_fleet(str(path))
    assert str(raised.value) == (
        f"1 problem with the quota config in {path}:\n"
        "  backend: fleet_config needs a config with backend: airflow_pools; this one's backend "
        "is aws_batch: give its job queue as job_queue='ml-training' instead"
    )
    source = headroom_source(fleet_config=str(path))
    with pytest.raises(ConfigError, match="backend is aws_batch"):
        source.config()


def test_a_missing_config_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        pools_fleet(str(tmp_path / "nowhere.yaml"))
    assert str(raised.value) == (
        f"1 problem with the quota config in {tmp_path / 'nowhere.yaml'}:\n  no such file"
    )


def test_a_missing_api_connection_says_how_to_define_it() -> None:
    source = PoolsHeadroom(FLEET_FILE, airflow_api_conn_id="quota_test_no_such_api")
    with pytest.raises(AirflowNotFoundException) as raised:
        source.headroom("nlp")
    assert str(raised.value) == (
        "no Airflow connection 'quota_test_no_such_api' (airflow_api_conn_id) to read the "
        "pools' task instances with: define it, e.g. "
        "AIRFLOW_CONN_QUOTA_TEST_NO_SUCH_API=http://USER:PASSWORD@HOST:PORT, as a user that "
        "may read task instances"
    )


def test_an_api_connection_without_a_user_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_QUOTA_TEST_NO_LOGIN", "http://api-server:8080")
    source = PoolsHeadroom(FLEET_FILE, airflow_api_conn_id="quota_test_no_login")
    with pytest.raises(ValueError) as raised:
        source.headroom("nlp")
    assert str(raised.value) == "Airflow connection 'quota_test_no_login' needs a host and a login"


def test_the_api_user_s_password_is_read_but_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_QUOTA_TEST_API", "https://quota-reader:s3cret-Passw0rd@api-server:8443"
    )
    source = PoolsHeadroom(FLEET_FILE, airflow_api_conn_id="quota_test_api")
    gateway = source.gateway
    assert gateway.base_url == "https://api-server:8443"
    assert gateway.credentials.password == "s3cret-Passw0rd"
    assert "s3cret" not in repr(gateway.credentials)
    assert "s3cret" not in repr(source.serialize())
