"""Whether a database holds the pool manager's tables, and bringing an older one up to date.

The manager adds what an earlier version's database lacks when it starts
(:func:`add_missing_columns`); a reader never changes a database, and refuses one that
lacks anything it would read (:func:`require_tables`).
"""

from __future__ import annotations

from sqlalchemy import MetaData, inspect, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from airflow_quota_provider.airflow_pools.database import (
    DatabaseUrlError,
    MissingDatabase,
    hidden,
)


def lacking(engine: Engine, metadata: MetaData) -> list[str]:
    """The tables (``table``) and columns (``table.column``) of ``metadata`` that the
    database lacks."""
    inspector = inspect(engine)
    present = set(inspector.get_table_names())
    found: list[str] = []
    for table in metadata.sorted_tables:
        if table.name not in present:
            found.append(table.name)
            continue
        have = {column["name"] for column in inspector.get_columns(table.name)}
        found += [f"{table.name}.{c.name}" for c in table.columns if c.name not in have]
    return found


def require_tables(engine: Engine, metadata: MetaData, given: str) -> None:
    """:class:`MissingDatabase` unless the database has every table and column of
    ``metadata``; :class:`DatabaseUrlError` if it cannot be read at all. The errors name
    the database by its URL as ``given`` (password hidden), not as the engine spells it."""
    url = hidden(given)
    try:
        missing = tuple(lacking(engine, metadata))
    except SQLAlchemyError as error:
        engine.dispose()
        raise DatabaseUrlError(f"cannot read database {url}: {_cause(error)}") from None
    if not missing:
        return
    engine.dispose()
    if {table.name for table in metadata.sorted_tables} <= set(missing):
        raise MissingDatabase(url, f"database {url} has no pool manager tables", missing)
    raise MissingDatabase(
        url,
        f"database {url} lacks the pool manager's {', '.join(missing)}: an earlier version "
        "of the manager made it, and this version's adds them when it starts",
        missing,
    )


def add_missing_columns(engine: Engine, metadata: MetaData) -> None:
    """Add the nullable columns a table of an earlier version lacks (``create_all`` makes
    missing tables only), so an existing database keeps its records."""
    for name in lacking(engine, metadata):
        table_name, _, column_name = name.partition(".")
        column = metadata.tables[table_name].c[column_name]
        if not column.nullable:
            raise RuntimeError(
                f"table {table_name} of the pool manager's database lacks column "
                f"{column_name}, which cannot be added in place; move the database aside"
            )
        kind = column.type.compile(dialect=engine.dialect)
        with engine.begin() as connection:
            connection.execute(text(f'ALTER TABLE {table_name} ADD COLUMN "{column_name}" {kind}'))


def _cause(error: SQLAlchemyError) -> str:
    """The driver's first line (``FATAL: database "quota" does not exist``), without the
    SQL and the link SQLAlchemy adds."""
    found = str(getattr(error, "orig", None) or error).strip()
    return found.splitlines()[0] if found else type(error).__name__
