"""A manager operators can trust: it fails at start saying why, leads its fleet alone
whatever database it was given, takes config edits live (or refuses them, saying so), and
its health is what ``status``, ``explain`` and the page show.

An HTTP server stands in for Airflow's api-server (pools, task instances, Variables; see
``test_refusal.py``); the real manager, CLI, store, heartbeat and view run against it.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from airflow_quota_provider.airflow_pools.connection import PASSWORD_VARIABLE
from airflow_quota_provider.airflow_pools.database import MissingDatabase
from airflow_quota_provider.airflow_pools.decide import PoolPlan
from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.gateway import AirflowGateway, Credentials
from airflow_quota_provider.airflow_pools.health import health
from airflow_quota_provider.airflow_pools.heartbeat import (
    AnotherLeader,
    Heartbeat,
    HeartbeatBoard,
    config_digest,
    variable_key,
)
from airflow_quota_provider.airflow_pools.store import Store
from airflow_quota_provider.cli import main
from airflow_quota_provider.config_file import config_of_text
from airflow_quota_provider.exceptions import ViewError
from airflow_quota_provider.pool_manager.config_watch import (
    ConfigRefused,
    ConfigWatch,
    read_config,
)
from airflow_quota_provider.pool_manager.manager import CycleReport, PoolManager, QuietCycles
from airflow_quota_provider.view.api import create_app
from airflow_quota_provider.view.pools_source import PoolsBackend
from airflow_quota_provider.view.text import Style, status_lines
from tests.pool_manager.test_reader_database import CONFIG as UNLIMITED
from tests.pool_manager.test_refusal import RefusingAirflow, airflow, pool, ti  # noqa: F401

NO_BORROWING = UNLIMITED.replace(
    "{name: borrow, capacity: {gpu: 4}, sharing: LEND_AND_BORROW}",
    "{name: borrow, capacity: {gpu: 4}, sharing: LEND_AND_BORROW, borrow_limit: 0}",
)
BROKEN = UNLIMITED.replace("sharing: LEND_AND_BORROW}", "sharing: LEND_AND_BORROW, borow: 1}")
NOW = 1_796_400_000.0


def beat(**changes: object) -> Heartbeat:
    fields: dict[str, object] = {
        "manager": "vm:1:ab",
        "database": "db-a",
        "database_url": "sqlite:////srv/a.db",
        "interval": 5.0,
        "started_at": NOW - 600,
        "cycled_at": NOW - 2,
        "config_digest": config_digest(UNLIMITED),
        "config_text": UNLIMITED,
        "config_path": "/etc/quota.yaml",
        "written_at": NOW - 2,
    }
    fields.update(changes)
    return Heartbeat(**fields)  # type: ignore[arg-type]


def fleet_of(text: str, tmp_path: Path) -> tuple[Fleet, Path]:
    path = tmp_path / "quota.yaml"
    path.write_text(text)
    return Fleet.of(read_config(path).config), path


@pytest.mark.parametrize(
    ("heartbeat", "file_text", "alerts"),
    [
        (beat(), UNLIMITED, []),
        (None, UNLIMITED, ["no pool manager has ever cycled fleet q: its pools are not managed"]),
        (
            beat(written_at=NOW - 16, cycled_at=NOW - 16),
            UNLIMITED,
            [
                "no pool manager has cycled fleet q since 2026-12-04 15:59:44 UTC (more than 3 of "
                "its 5 s heartbeats): its pools stay as it last set them; last seen: manager "
                "vm:1:ab on sqlite:////srv/a.db (cycled 16 s ago)"
            ],
        ),
        (
            beat(error="cannot reach Airflow (...)", error_at=NOW - 1),
            UNLIMITED,
            ["the pool manager's cycles fail since 2026-12-04 15:59:59 UTC: cannot reach Airflow"],
        ),
        (
            beat(),
            NO_BORROWING,
            [
                "the config file differs from the one the pool manager runs "
                f"({config_digest(UNLIMITED)}, /etc/quota.yaml): shown as the manager runs it"
            ],
        ),
        (
            beat(config_refused="quota.yaml: shares[1].borow: unknown key"),
            BROKEN,
            [
                "the pool manager refused its config file's newer text and runs the older one "
                f"({config_digest(UNLIMITED)}): quota.yaml: shares[1].borow: unknown key"
            ],
        ),
    ],
    ids=["well", "never", "stale", "failing", "file-differs", "refused"],
)
def test_what_is_said_of_the_manager(
    heartbeat: Heartbeat | None, file_text: str, alerts: list[str], tmp_path: Path
) -> None:
    fleet, _ = fleet_of(UNLIMITED, tmp_path)
    said = health(fleet, heartbeat, NOW, config_digest(file_text))
    assert len(said.alerts) == len(alerts)
    for alert, start in zip(said.alerts, alerts, strict=True):
        assert alert.startswith(start), alert


def test_a_file_that_differs_is_shown_as_the_manager_runs_it(tmp_path: Path) -> None:
    """Nothing vanishes from status because the reader's file was edited first."""
    edited, _ = fleet_of(NO_BORROWING, tmp_path)
    said = health(edited, beat(), NOW, config_digest(NO_BORROWING))
    assert said.fleet.config.shares[1].borrow_limit == -1  # the manager's config


def test_a_config_edit_is_taken_at_the_next_poll_and_a_bad_one_refused_once(
    tmp_path: Path,
) -> None:
    _, path = fleet_of(UNLIMITED, tmp_path)
    watch = ConfigWatch(path, read_config(path))
    assert watch.poll() is None  # unchanged
    path.write_text(NO_BORROWING)
    taken = watch.poll()
    assert taken is not None and taken.config.shares[1].borrow_limit == 0
    path.write_text(BROKEN)
    with pytest.raises(ConfigRefused) as refused:
        watch.poll()
    assert any("borow" in problem for problem in refused.value.problems)
    watch.reread()  # SIGHUP: read again; the same refused text is not raised twice
    assert watch.poll() is None and watch.refused is not None
    assert watch.running.config.shares[1].borrow_limit == 0  # still the last good one
    path.write_text(NO_BORROWING.replace("job_queue: q", "job_queue: other"))
    with pytest.raises(ConfigRefused, match="restart the manager to run another fleet"):
        watch.poll()
    path.write_text(NO_BORROWING)  # the edit undone
    assert watch.poll() is None and watch.refused is None


def manager_of(
    airflow: RefusingAirflow,  # noqa: F811
    tmp_path: Path,
    text: str = UNLIMITED,
) -> tuple[PoolManager, Path]:
    fleet, path = fleet_of(text, tmp_path)
    own, borrow = fleet.pool_of("own", "gpu"), fleet.pool_of("borrow", "gpu")
    airflow.refuse = False
    airflow.pools = {own: pool(own, 0, fleet), borrow: pool(borrow, 0, fleet)}
    airflow.tis = [ti("borrow", borrow, 6, "scheduled", None)]
    gateway = AirflowGateway(airflow.url, Credentials("manager", "secret"))
    me = beat(cycled_at=None, written_at=0.0, started_at=time.time())
    manager = PoolManager(
        fleet,
        gateway,
        Store(f"sqlite:///{tmp_path / 'pm.db'}"),
        watch=ConfigWatch(path, read_config(path)),
        heartbeat=HeartbeatBoard(gateway, "q"),
        me=me,
    )
    return manager, path


def test_the_running_manager_takes_a_config_edit_at_its_next_cycle(
    airflow: RefusingAirflow,  # noqa: F811
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """borrow_limit: 0 written while borrow's 6-GPU task waits: the task is not started
    borrowing 2 (it was, 33 s later, when edits were ignored)."""
    manager, path = manager_of(airflow, tmp_path)
    path.write_text(NO_BORROWING)
    with caplog.at_level(logging.INFO):
        report = manager.cycle()
    assert report.plan.start == ()
    (never,) = report.plan.refuse  # 6 GPUs where it may hold 4 at most: it could never start
    assert never.key.dag_id == "borrow" and "borrow_limit" in never.note
    assert f"config {path} changed" in caplog.text
    written = HeartbeatBoard(manager.gateway, "q").read()
    assert written is not None and written.config_digest == config_digest(NO_BORROWING)
    assert written.cycled_at is not None and written.error == ""


def test_a_bad_edit_is_refused_the_old_config_kept_and_the_refusal_shown(
    airflow: RefusingAirflow,  # noqa: F811
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    manager, path = manager_of(airflow, tmp_path)
    path.write_text(BROKEN)
    with caplog.at_level(logging.ERROR):
        report = manager.cycle()
    assert [start.slots for start in report.plan.start] == [6]  # as the running config says
    assert "changed but is refused; still running the config" in caplog.text
    backend = PoolsBackend(manager.fleet, manager.gateway, manager.store, config_path=str(path))
    view = backend.queue("q")
    (alert,) = view.alerts
    assert alert.startswith(
        "the pool manager refused its config file's newer text and runs the older one "
        f"({config_digest(UNLIMITED)}): {path}: shares[0].borow"
    )
    assert f"ALERT: {alert}" in status_lines(view, Style())


def start(
    airflow: RefusingAirflow,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *options: str,
    password: str = "secret",
) -> tuple[int, str]:
    """Start ``pool-manager`` for the UNLIMITED fleet: its exit code and stderr."""
    _, path = fleet_of(UNLIMITED, tmp_path)
    monkeypatch.setenv(PASSWORD_VARIABLE, password)
    code = main(
        [
            *("pool-manager", "--config", str(path), "--api-url", airflow.url),
            *("--username", "manager", "--database", f"sqlite:///{tmp_path / 'pm.db'}"),
            *options,
        ]
    )
    return code, capsys.readouterr().err


def test_a_second_manager_on_another_database_refuses_to_start_naming_the_first(
    airflow: RefusingAirflow,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = beat(written_at=time.time(), cycled_at=time.time(), started_at=time.time() - 60)
    airflow.variables[variable_key("q")] = first.to_json()
    code, err = start(airflow, tmp_path, monkeypatch, capsys, "--once")
    assert code == 1
    assert err.startswith(
        "airflow-quota pool-manager: manager vm:1:ab on sqlite:////srv/a.db (cycled 0 s ago) "
        "manages fleet q; a manager acts only where no other does: stop that one, or run this "
        "one with its --database so their lease decides"
    ), err


def test_of_two_managers_acting_at_once_the_younger_stands_down(
    airflow: RefusingAirflow,  # noqa: F811
) -> None:
    board = HeartbeatBoard(AirflowGateway(airflow.url, Credentials("m", "s")), "q")
    older = beat(manager="a:1:x", database="db-a", started_at=time.time() - 60)
    younger = beat(manager="b:2:y", database="db-b", started_at=time.time())
    board.write(younger)
    board.check(younger)  # itself
    board.check(older)  # the older keeps acting: the younger reads it at its next check
    board.write(older)
    with pytest.raises(AnotherLeader):
        board.check(younger)
    board.write(beat(manager="c:3:z", database="db-a", started_at=time.time() - 600))
    board.check(older)  # the same database: the lease decides
    stale = beat(manager="d:4:w", database="db-d", started_at=0.0, written_at=time.time() - 60)
    airflow.variables[variable_key("q")] = stale.to_json()
    board.check(younger)  # a manager silent for 3 intervals leads nothing


@pytest.mark.parametrize(
    ("login", "options", "said"),
    [
        (
            500,
            [],
            "airflow-quota pool-manager: Airflow failed (list pools: answered 500 Internal "
            "Server Error: Internal Server Error): `airflow-quota doctor --config CONFIG`, run "
            "where the api-server runs, names what in an installation breaks Airflow\n",
        ),
        (
            401,
            [],
            "airflow-quota pool-manager: Airflow refuses the manager's login (log in: answered "
            "401 for user manager): check the user and its password",
        ),
        (
            201,
            ["--api-url", "http://127.0.0.1:9", "--start-timeout", "0.5"],
            "airflow-quota pool-manager: cannot reach Airflow (log in: Airflow's API at "
            "http://127.0.0.1:9 is unreachable",
        ),
    ],
    ids=["api-server-failing", "wrong-password", "unreachable"],
)
def test_a_manager_that_cannot_work_exits_at_start_saying_why(
    airflow: RefusingAirflow,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    login: int,
    options: list[str],
    said: str,
) -> None:
    if login == 500:
        airflow.pools_status = 500
    else:
        airflow.login_status = login
    started = time.monotonic()
    code, err = start(airflow, tmp_path, monkeypatch, capsys, *options, password="wrong")
    assert code == 1
    assert time.monotonic() - started < 30
    assert err.startswith(said), err
    assert "wrong" not in err
    assert err.splitlines()[-1].startswith(
        "airflow-quota pool-manager: `airflow-quota doctor --config "
    ), "the start points to the check users can run"


def test_a_config_naming_another_fleets_pool_is_refused_at_start(
    airflow: RefusingAirflow,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    other = Fleet.of(config_of_text(UNLIMITED, "quota.yaml"))
    name = other.pool_of("own", "gpu")
    airflow.pools = {
        name: {
            **pool(name, 2, other),
            "description": "quota share teama, gpu: "
            "managed by airflow-quota pool-manager for fleet gpus",
        }
    }
    code, err = start(airflow, tmp_path, monkeypatch, capsys)
    assert code == 1
    assert err == (
        "airflow-quota pool-manager: the config names another fleet's pools: pool "
        f"{name} is managed by airflow-quota pool-manager for fleet gpus (its description "
        "says so); two managers would fight over its slots: name another pool for share own's "
        "gpu in the config (pools.own.gpu)\n"
    )


def test_quiet_cycles_are_summed_up_and_a_change_is_logged_at_once(
    airflow: RefusingAirflow,  # noqa: F811
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    manager, _ = manager_of(airflow, tmp_path)
    quiet = QuietCycles(0.0)
    with caplog.at_level(logging.INFO):
        report = manager.cycle()  # starts the waiting task
        quiet.add(report, 1.0)
        idle = CycleReport(PoolPlan(slots={}), calls=3, pools_changed=0)
        for moment in range(2, 300, 5):
            quiet.add(idle, float(moment))
        quiet.add(idle, 301.0)
    lines = [r.getMessage() for r in caplog.records if r.name.endswith("manager")]
    assert lines[0].startswith("cycle: 1 started, 0 preempted")
    assert [line for line in lines if "changed nothing" in line] == [
        "61 cycles in the last 301 s changed nothing; 0 waiting; 3.0 REST calls a cycle"
    ]


def test_the_page_says_503_until_the_manager_made_its_database_then_recovers(
    airflow: RefusingAirflow,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The view opens the manager's database without making it; a missing one is a 503
    naming it (the page shows it), and the page works once the manager has started."""
    fleet, _ = fleet_of(UNLIMITED, tmp_path)
    database = f"sqlite:///{tmp_path / 'pm.db'}"
    gateway = AirflowGateway(airflow.url, Credentials("m", "s"))

    def backend() -> PoolsBackend:
        try:
            store = Store(database, create=False)
        except MissingDatabase as error:
            raise ViewError(str(error)) from None
        return PoolsBackend(fleet, gateway, store)

    api = TestClient(create_app(backend, lambda: None))
    answer = api.get("/api/v1/queues/q")
    assert answer.status_code == 503
    assert answer.json()["detail"].startswith(f"no pool manager database at {tmp_path / 'pm.db'}")
    assert not (tmp_path / "pm.db").exists()
    Store(database)  # the manager starts
    assert api.get("/api/v1/queues/q").status_code == 200
