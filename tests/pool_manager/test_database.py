"""The pool manager's database URL: every form the README and ``--help`` show works after
the install they show, and one that cannot work says what to install or write."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from airflow_quota_provider.airflow_pools.database import DatabaseUrlError, engine_for
from airflow_quota_provider.airflow_pools.store import Store
from airflow_quota_provider.cli import main
from tests.postgres import plain, postgres_database

FLEET = Path(__file__).resolve().parent / "fleet.yaml"


@pytest.mark.parametrize("scheme", ["postgresql", "postgres", "postgresql+psycopg2"])
def test_each_postgresql_form_keeps_records_through_an_installed_driver(scheme: str) -> None:
    for url in postgres_database():
        if url is None:
            pytest.skip("no PostgreSQL answers at 127.0.0.1:5432")
        store = Store(plain(url).replace("postgresql://", f"{scheme}://", 1))
        assert store.engine.dialect.name == "postgresql"
        assert store.engine.dialect.driver == "psycopg2"  # installed by the postgres extra
        assert store.refusal() is None
        store.engine.dispose()


def test_a_plain_postgresql_url_does_not_depend_on_what_sqlalchemy_defaults_to() -> None:
    # SQLAlchemy 2.1 reads postgresql:// as psycopg 3; the provider picks what is installed
    engine = engine_for("postgresql://u:secret@db.example:5432/quota")
    assert engine.url.drivername == "postgresql+psycopg2"


@pytest.mark.skipif(importlib.util.find_spec("psycopg") is not None, reason="psycopg installed")
def test_a_driver_that_is_not_installed_is_named_with_what_to_install() -> None:
    with pytest.raises(DatabaseUrlError) as raised:
        engine_for("postgresql+psycopg://u:secret@db.example/quota")
    assert str(raised.value) == (
        "database URL postgresql+psycopg://u:***@db.example/quota needs the PostgreSQL driver "
        "psycopg, which is not installed: pip install psycopg"
    )


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "mysql://u:secret@db/quota",
            "database 'mysql://u:***@db/quota': the pool manager keeps its records in SQLite "
            "or PostgreSQL, not mysql",
        ),
        (
            "postgresql+asyncpg://u@db/quota",
            "database URL postgresql+asyncpg://u@db/quota: driver 'asyncpg' is not supported; "
            "use postgresql+psycopg2:// or postgresql+psycopg:// (or postgresql:// for "
            "whichever is installed)",
        ),
        (
            "not a url",
            "database 'not a url' is not a database URL: give sqlite:///PATH or "
            "postgresql://USER:PASSWORD@HOST:PORT/DATABASE",
        ),
    ],
)
def test_a_database_the_manager_cannot_use_is_refused_saying_why(url: str, message: str) -> None:
    with pytest.raises(DatabaseUrlError) as raised:
        engine_for(url)
    assert str(raised.value) == message


def test_the_manager_exits_at_start_on_a_database_it_cannot_use(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_QUOTA_API_PASSWORD", "secret")
    code = main(
        [
            "pool-manager",
            "--config",
            str(FLEET),
            "--api-url",
            "http://127.0.0.1:9",
            "--username",
            "manager",
            "--database",
            "mysql://u:secret@db/quota",
        ]
    )
    assert code == 1
    assert capsys.readouterr().err.strip() == (
        "airflow-quota pool-manager: --database: database 'mysql://u:***@db/quota': the pool "
        "manager keeps its records in SQLite or PostgreSQL, not mysql"
    )
