"""The pool manager's database URL, made into an engine with a driver that is installed.

Supported: SQLite (``sqlite:///PATH``, the default; Python's own driver) and
PostgreSQL through psycopg2 (``postgresql+psycopg2://``, installed by the
``postgres`` extra: ``pip install 'airflow-quota-provider[postgres]'``; Airflow's
postgres provider brings it too) or psycopg 3 (``postgresql+psycopg://``, with
SQLAlchemy 2). A plain ``postgresql://`` (or ``postgres://``) means whichever of the
two is installed, psycopg2 first: SQLAlchemy itself reads it as psycopg2 before 2.1
and as psycopg 3 from 2.1, so the same URL would need another driver after an
upgrade.

Only the manager creates its database (:func:`engine_for`); readers (``status``,
``explain``, ``events``, the GPU Quotas page) open one that exists
(:func:`existing_engine_for`): connecting to a SQLite file that is not there would
make an empty one, read as "nothing happened".
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

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


class MissingDatabase(DatabaseUrlError):
    """A reader named a database the pool manager never made: a SQLite file that is not
    there, or a database without the manager's tables (``missing`` names them)."""

    def __init__(self, url: str, message: str, missing: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.url = url
        """The database's URL, its password hidden."""
        self.missing = missing
        """The manager's tables (``table``) and columns (``table.column``) it lacks."""

    def __reduce__(self) -> tuple[type[MissingDatabase], tuple[str, str, tuple[str, ...]]]:
        return (type(self), (self.url, str(self), self.missing))


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
            f"database {hidden(url)!r}: the pool manager keeps "
            f"its records in SQLite or PostgreSQL, not {backend}"
        )
    return create_engine(parsed, future=True)


def existing_engine_for(url: str) -> Engine:
    """An engine for a database that exists; :class:`MissingDatabase` for a SQLite file
    that does not (connecting would create it). Whether the manager's tables are there is
    :class:`~airflow_quota_provider.airflow_pools.store.Store`'s to check."""
    engine = engine_for(url)
    path = sqlite_file(url)
    if path is not None and not path.is_file():
        shown = hidden(url)
        raise MissingDatabase(shown, f"no pool manager database at {path} ({shown})")
    return engine


def sqlite_file(url: str) -> Path | None:
    """The absolute path of a SQLite URL's file; ``None`` for another database, and for a
    SQLite database in memory or given as a ``file:`` URI."""
    parsed = make_url(url)
    if not parsed.drivername.startswith("sqlite") or parsed.query.get("uri"):
        return None
    if not parsed.database or parsed.database == ":memory:":
        return None
    return Path(parsed.database).absolute()


def _postgres_driver(url: str, driver: str) -> str:
    if driver:
        if driver not in DRIVERS:
            raise DatabaseUrlError(
                f"database URL {hidden(url)}: driver {driver!r} is not supported; use "
                "postgresql+psycopg2:// or postgresql+psycopg:// (or postgresql:// for "
                "whichever is installed)"
            )
        if driver == "psycopg" and not _SQLALCHEMY_2:
            raise DatabaseUrlError(
                f"database URL {hidden(url)}: psycopg 3 needs SQLAlchemy 2, and "
                f"{sqlalchemy.__version__} is installed; use postgresql+psycopg2:// ({INSTALL})"
            )
        if importlib.util.find_spec(DRIVERS[driver]) is None:
            raise DatabaseUrlError(
                f"database URL {hidden(url)} needs the PostgreSQL driver {driver}, which is "
                f"not installed: pip install {driver if driver == 'psycopg' else INSTALL}"
            )
        return driver
    for name, module in DRIVERS.items():
        usable = _SQLALCHEMY_2 or name != "psycopg"
        if usable and importlib.util.find_spec(module) is not None:
            return name
    raise DatabaseUrlError(
        f"database URL {hidden(url)} needs a PostgreSQL driver and none is installed: {INSTALL}"
    )


def hidden(url: str) -> str:
    """``url`` with its password shown as ``***``."""
    return make_url(url).render_as_string(hide_password=True)
