"""Real decisions and conversations for the audit log, a reader that bypasses it, and the PostgreSQL URL."""

from __future__ import annotations

import os
from typing import Any

import pytest
from sqlalchemy import create_engine, func, select

from classifiers.conversation import Conversation, Message
from guard.audit.schema import decisions
from guard.decision import Decision

POSTGRES_ENV = "COUCHGUARD_TEST_POSTGRES_URL"


def require_postgres_url() -> str:
    url = os.environ.get(POSTGRES_ENV)
    if url:
        return url
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true but {POSTGRES_ENV} is not set: run .ci/postgres.sh (as root) or point it at a server")
    pytest.skip(f"no PostgreSQL: set {POSTGRES_ENV} (e.g. `sudo .ci/postgres.sh` prints one)")


def record(
    audit,
    request_id: str,
    text: str = "a calm day",
    *,
    rail: str = "input",
    delivered: str | None = None,
    **context: Any,
) -> None:
    """One rail decision through the audit log's observer, as the pipeline calls it."""
    conversation = Conversation(messages=(Message(role="user", content=text),))
    decision = Decision(rail=rail, action="allow", signals={"user.suicide": 0.01}, text=delivered)
    audit.observer(
        conversation, decision, {"request_id": request_id, "product": "main", "policy": "mental-health", **context}
    )


def stored(url: str) -> list[dict[str, Any]]:
    """Every row as the database holds it, through a connection of its own."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return [dict(r._mapping) for r in connection.execute(select(decisions).order_by(decisions.c.id))]
    finally:
        engine.dispose()


def count_by_request(url: str) -> dict[str, int]:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            query = select(decisions.c.request_id, func.count()).group_by(decisions.c.request_id)
            return {request_id: n for request_id, n in connection.execute(query)}
    finally:
        engine.dispose()
