"""The audit suite runs on SQLite and on PostgreSQL.

PostgreSQL comes from COUCHGUARD_TEST_POSTGRES_URL (`.ci/postgres.sh` starts one on loopback, and `make test` and
`.ci/run` call it). Without the variable the PostgreSQL cases skip, except in CI (CI=true), where they fail: a
suite that silently stopped testing PostgreSQL would look green. Each test gets its own schema, so tests never see
each other's rows.
"""

from __future__ import annotations

import uuid
from urllib.parse import quote

import pytest
from sqlalchemy.pool import NullPool

from .helpers import require_postgres_url


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'audit.db'}"
        return
    yield from _postgres_schema()


@pytest.fixture
def postgres_url():
    yield from _postgres_schema()


def _postgres_schema():
    base = require_postgres_url()
    from sqlalchemy import create_engine, text

    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base, poolclass=NullPool)  # a connection per use: tests terminate backends
    with admin.begin() as connection:
        connection.execute(text(f"CREATE SCHEMA {schema}"))
    separator = "&" if "?" in base else "?"
    try:
        yield f"{base}{separator}options={quote(f'-csearch_path={schema}')}"
    finally:
        with admin.begin() as connection:
            connection.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


@pytest.fixture(scope="session")
def redactor():
    from guard.audit import shared_redactor

    return shared_redactor()
