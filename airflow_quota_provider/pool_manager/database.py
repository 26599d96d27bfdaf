"""The pool manager's database URL, made into an engine with a driver that is installed.

Supported: SQLite (``sqlite:///PATH``, the default; Python's own driver) and
PostgreSQL through psycopg2 (``postgresql+psycopg2://``, installed by the
``postgres`` extra: ``pip install 'airflow-quota-provider[postgres]'``; Airflow's
postgres provider brings it too) or psycopg 3 (``postgresql+psycopg://``, with
SQLAlchemy 2). A plain ``postgresql://`` (or ``postgres://``) means whichever of the
two is installed, psycopg2 first: SQLAlchemy itself reads it as psycopg2 before 2.1
and as psycopg 3 from 2.1, so the same URL would need another driver after an
upgrade.
"""

from __future__ import annotations

import importlib.util

import sqlalchemy
from sqlalchemy import create_engine
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError

DRIVERS = {"psycopg2": "psycopg2", "psycopg": "psycopg"}
"""PostgreSQL drivers by SQLAlchemy's name, with the module each imports."""

_SQLALCHEMY_2 = int(sqlalchemy.__version__.split(".")[0]) >= 2
"""SQLAlchemy 1.4 (Airflow 2.11 and 3.0 pin it) has no psycopg 3 dialect."""

INSTALL = "pip install 'airflow-quota-provider[postgres]' (psycopg2)"


class DatabaseUrlError(ValueError):
    """A database URL that is not valid or whose driver is not installed."""


def engine_for(url: str) -> Engine:
    """An engine for ``url``; :class:`DatabaseUrlError` saying what to install or write
    if it cannot be used."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise DatabaseUrlError(
            f"database {url!r} is not a database URL: give sqlite:///PATH or "
            "postgresql://USER:PASSWORD@HOST:PORT/DATABASE"
        ) from None
    backend, _, driver = parsed.drivername.partition("+")
    if backend in ("postgresql", "postgres"):
        parsed = parsed.set(drivername=f"postgresql+{_postgres_driver(url, driver)}")
    elif backend != "sqlite":
        raise DatabaseUrlError(
            f"database {_hidden(url)!r}: the pool manager keeps "
            f"its records in SQLite or PostgreSQL, not {backend}"
        )
    return create_engine(parsed, future=True)


def _postgres_driver(url: str, driver: str) -> str:
    if driver:
        if driver not in DRIVERS:
            raise DatabaseUrlError(
                f"database URL {_hidden(url)}: driver {driver!r} is not supported; use "
                "postgresql+psycopg2:// or postgresql+psycopg:// (or postgresql:// for "
                "whichever is installed)"
            )
        if driver == "psycopg" and not _SQLALCHEMY_2:
            raise DatabaseUrlError(
                f"database URL {_hidden(url)}: psycopg 3 needs SQLAlchemy 2, and "
                f"{sqlalchemy.__version__} is installed; use postgresql+psycopg2:// ({INSTALL})"
            )
        if importlib.util.find_spec(DRIVERS[driver]) is None:
            raise DatabaseUrlError(
                f"database URL {_hidden(url)} needs the PostgreSQL driver {driver}, which is "
                f"not installed: pip install {driver if driver == 'psycopg' else INSTALL}"
            )
        return driver
    for name, module in DRIVERS.items():
        usable = _SQLALCHEMY_2 or name != "psycopg"
        if usable and importlib.util.find_spec(module) is not None:
            return name
    raise DatabaseUrlError(
        f"database URL {_hidden(url)} needs a PostgreSQL driver and none is installed: {INSTALL}"
    )


def _hidden(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)
