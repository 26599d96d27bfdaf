"""``status``, ``explain`` and ``events`` read the pool manager's database and never make one.

The manager's default database is the same file from any folder
(``$AIRFLOW_HOME/airflow-quota-pool-manager.db``); a reader naming a database the
manager never made (a SQLite file that is not there, a database without the manager's
tables) exits 1 with one line naming it, and leaves nothing behind.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from airflow_quota_provider.airflow_pools.connection import PASSWORD_VARIABLE
from airflow_quota_provider.airflow_pools.database import MissingDatabase, engine_for
from airflow_quota_provider.airflow_pools.store import Store
from airflow_quota_provider.cli import main
from tests.pool_manager.fake_http import serving
from tests.pool_manager.test_refusal import VICTIM, RefusingAirflow, reclaim
from tests.postgres import plain, postgres_database

CONFIG = """\
backend: airflow_pools
job_queue: q
capacity: {gpu: 8}
shares:
  - {name: own, capacity: {gpu: 4}, sharing: LEND_AND_BORROW}
  - {name: borrow, capacity: {gpu: 4}, sharing: LEND_AND_BORROW}
"""
"""The fleet of :func:`~tests.pool_manager.test_refusal.reclaim`, as a file."""

READERS = [["status"], ["events"], ["explain", "own/r1/train"]]
HINT = "; pass --database, the one the pool manager runs with"


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "quota.yaml"
    path.write_text(CONFIG)
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``$AIRFLOW_HOME``, not made yet; the password of ``--username`` in the environment."""
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path / "airflow"))
    monkeypatch.setenv(PASSWORD_VARIABLE, "secret")
    return tmp_path / "airflow"


def folder(tmp_path: Path, name: str) -> Path:
    made = tmp_path / name
    made.mkdir()
    return made


def test_events_from_another_folder_reads_what_the_manager_recorded_by_default(
    config: Path,
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    login = ("--config", str(config), "--username", "manager")
    with serving(RefusingAirflow()) as airflow:
        airflow.refuse = False
        reclaim(airflow)
        monkeypatch.chdir(folder(tmp_path, "manager"))
        assert main(["pool-manager", "--once", *login, "--api-url", airflow.url]) == 0
        assert airflow.cleared == ["train"]
        capsys.readouterr()
        monkeypatch.chdir(folder(tmp_path, "reader"))
        assert main(["events", *login, "--api-url", airflow.url]) == 0
    shown = capsys.readouterr()
    assert VICTIM in shown.out and "RECLAIM" in shown.out, shown
    assert list((tmp_path / "manager").iterdir()) == list((tmp_path / "reader").iterdir()) == []
    assert (home / "airflow-quota-pool-manager.db").is_file()


@pytest.mark.parametrize("command", READERS, ids=lambda c: c[0])
def test_a_missing_default_database_is_an_error_naming_it_and_nothing_is_made(
    command: list[str],
    config: Path,
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(folder(tmp_path, "elsewhere"))
    login = ("--config", str(config), "--api-url", "http://127.0.0.1:9", "--username", "u")
    assert main([*command, *login]) == 1
    database = home / "airflow-quota-pool-manager.db"
    assert capsys.readouterr().err == (
        f"error: no pool manager database at {database} (sqlite:///{database}){HINT}\n"
    )
    assert not home.exists()
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_a_missing_sqlite_file_given_by_a_relative_path_is_named_in_full(
    config: Path,
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(folder(tmp_path, "elsewhere"))
    login = ("--config", str(config), "--api-url", "http://127.0.0.1:9", "--username", "u")
    assert main(["events", *login, "--database", "sqlite:///pm.db"]) == 1
    missing = tmp_path / "elsewhere" / "pm.db"
    assert capsys.readouterr().err == (
        f"error: no pool manager database at {missing} (sqlite:///pm.db){HINT}\n"
    )
    assert not missing.exists()


def test_a_postgresql_database_without_the_managers_tables_is_an_error_and_stays_empty(
    config: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for url in postgres_database():
        if url is None:
            pytest.skip("no PostgreSQL answers at 127.0.0.1:5432")
        login = ("--config", str(config), "--api-url", "http://127.0.0.1:9", "--username", "u")
        assert main(["events", *login, "--database", plain(url)]) == 1
        assert capsys.readouterr().err == (
            f"error: database {plain(url)} has no pool manager tables{HINT}\n"
        )
        engine = engine_for(url)
        assert inspect(engine).get_table_names() == []
        engine.dispose()
        nowhere = plain(url).rsplit("/", 1)[0] + "/no_such_database"
        assert main(["events", *login, "--database", nowhere]) == 1
        assert capsys.readouterr().err.startswith(f"error: cannot read database {nowhere}: ")


def test_a_database_of_an_earlier_manager_is_named_with_what_it_lacks(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'pm.db'}"
    Store(url).engine.dispose()
    engine = engine_for(url)
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE quota_refusal"))
        connection.execute(text("ALTER TABLE quota_preemption DROP COLUMN released_at"))
    engine.dispose()
    with pytest.raises(MissingDatabase) as raised:
        Store(url, create=False)
    assert raised.value.missing == ("quota_preemption.released_at", "quota_refusal")
    unpickled = pickle.loads(pickle.dumps(raised.value))
    assert (str(unpickled), unpickled.url, unpickled.missing) == (
        str(raised.value),
        url,
        raised.value.missing,
    )
    assert str(raised.value) == (
        f"database {url} lacks the pool manager's quota_preemption.released_at, quota_refusal: "
        "an earlier version of the manager made it, and this version's adds them when it starts"
    )
    Store(url)  # the manager brings it up to date
    Store(url, create=False)
