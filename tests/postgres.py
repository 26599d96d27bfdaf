"""A fresh database on the local PostgreSQL for one test run, when there is one."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

POSTGRES = "postgresql+psycopg2://postgres@127.0.0.1:5432/{database}"


def postgres_database() -> Iterator[str | None]:
    """A fresh database on the local PostgreSQL, dropped afterwards; ``None`` if there is none."""
    try:
        import psycopg2
    except ImportError:
        print("psycopg2 is not installed: the end-to-end run uses SQLite")
        yield None
        return
    try:
        admin = psycopg2.connect(host="127.0.0.1", user="postgres", dbname="postgres")
    except psycopg2.OperationalError as error:
        print(f"no PostgreSQL at 127.0.0.1:5432 ({error}): the end-to-end run uses SQLite")
        yield None
        return
    admin.autocommit = True
    name = f"airflow_quota_e2e_{uuid.uuid4().hex[:8]}"
    with admin.cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{name}"')
    try:
        yield POSTGRES.format(database=name)
    finally:
        with admin.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def plain(url: str) -> str:
    """``url`` as ``pool-manager --help`` shows it, ``postgresql://`` with no driver named
    (the provider picks an installed one; Airflow's own database keeps ``+psycopg2``)."""
    return url.replace("postgresql+psycopg2://", "postgresql://", 1)
