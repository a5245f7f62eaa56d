"""The audit database: an engine that survives server restarts, the schema created once by whichever replica is
first, and which failures are worth retrying."""

from __future__ import annotations

from sqlalchemy import create_engine, inspect, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from .schema import metadata

# any fixed number: the lock that serialises schema creation among replicas starting at the same moment
_SCHEMA_LOCK = 0x636F7563  # "couc"
_UNDEFINED_TABLE = "42P01"


def make_engine(url: str) -> Engine:
    """Raises at once for a URL that can never work (unknown dialect, missing driver): that stops start-up."""
    if url.startswith("sqlite"):
        # the writer thread and the readers share the file; wait for another process's lock instead of failing
        connect_args = {"check_same_thread": False, "timeout": 30}
    else:
        # a database that is down should fail a connection attempt quickly, so rows are buffered and retried
        connect_args = {"connect_timeout": 5}
    # pre_ping: a pooled connection that died with a server restart is replaced instead of failing a write
    return create_engine(url, connect_args=connect_args, pool_pre_ping=True, future=True)


def create_schema(engine: Engine) -> None:
    """Create the table if it is missing. On PostgreSQL replicas starting together would race on the catalog
    ("duplicate key value violates unique constraint pg_type_typname_nsp_index"), so they take turns."""
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _SCHEMA_LOCK})
        metadata.create_all(connection, checkfirst=True)
        _add_missing_columns(connection)


def _add_missing_columns(connection: Connection) -> None:
    """Columns added to the table since a database was created (all nullable), so an existing audit log keeps
    working without a migration step. Same DDL on SQLite and PostgreSQL; on PostgreSQL it runs under the schema
    lock taken above, so replicas do not race to add a column."""
    for table in metadata.tables.values():
        present = {column["name"] for column in inspect(connection).get_columns(table.name)}
        for column in table.columns:
            if column.name in present:
                continue
            kind = column.type.compile(dialect=connection.dialect)
            connection.execute(text(f"ALTER TABLE {table.name} ADD COLUMN {column.name} {kind}"))


def is_transient(exc: BaseException) -> bool:
    """A failure that retrying can cure: the server is down, restarting, or locked (SQLite), or the table went
    missing (it is created again). Anything else is about the rows themselves."""
    if isinstance(exc, (OperationalError, InterfaceError)):
        return True
    if isinstance(exc, DBAPIError):
        return bool(exc.connection_invalidated) or getattr(exc.orig, "sqlstate", None) == _UNDEFINED_TABLE
    return False
