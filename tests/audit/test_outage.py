"""PostgreSQL going away and coming back: connections cut by a restart (simulated, and real where the server is
ours to restart), a server that refuses connections for a while, and a buffer that fills up during a long outage.
The outages go through a loopback forwarder (forwarder.py), so the server other tests share stays up."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from guard.audit import AuditLog

from .forwarder import Forwarder
from .helpers import count_by_request, record


def _through(forwarder: Forwarder, url: str) -> str:
    return make_url(url).set(host="127.0.0.1", port=forwarder.port).render_as_string(hide_password=False)


def _forwarder_for(url: str) -> Forwarder:
    parsed = make_url(url)
    return Forwarder(parsed.host or "127.0.0.1", parsed.port or 5432).up()


def test_the_writer_reconnects_after_the_server_drops_its_connections(postgres_url):
    audit = AuditLog(postgres_url).start()
    try:
        record(audit, "before")
        assert audit.flush(timeout=30)
        # what a server restart does to its clients: every connection of this role is terminated
        admin = create_engine(postgres_url)
        with admin.begin() as connection:
            killed = connection.execute(
                text(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND usename = current_user AND pid <> pg_backend_pid()"
                )
            ).scalar()
        admin.dispose()
        assert killed >= 1  # the writer's pooled connection
        for i in range(20):
            record(audit, f"after-{i}")
        assert audit.flush(timeout=60)
    finally:
        audit.close()
    assert count_by_request(postgres_url) == {"before": 1, **{f"after-{i}": 1 for i in range(20)}}


def test_no_row_is_lost_while_the_server_is_down(postgres_url):
    forwarder = _forwarder_for(postgres_url)
    audit = AuditLog(_through(forwarder, postgres_url)).start()
    try:
        for i in range(10):
            record(audit, f"up-{i}")
        assert audit.flush(timeout=30)
        forwarder.down()
        for i in range(50):
            record(audit, f"down-{i}")
        assert not audit.flush(timeout=1.5)  # held in the buffer, not written and not dropped
        assert audit.pending == 50 and audit.dropped == 0
        forwarder.up()
        assert audit.flush(timeout=60)
    finally:
        audit.close()
        forwarder.down()
    counts = count_by_request(postgres_url)
    assert counts == {**{f"up-{i}": 1 for i in range(10)}, **{f"down-{i}": 1 for i in range(50)}}


def test_a_full_buffer_drops_new_rows_and_counts_them(postgres_url):
    forwarder = _forwarder_for(postgres_url)
    audit = AuditLog(_through(forwarder, postgres_url), buffer_rows=20).start()
    try:
        forwarder.down()
        for i in range(50):
            record(audit, f"r{i}")
        assert audit.dropped == 30 and audit.pending == 20
        forwarder.up()
        assert audit.flush(timeout=60)
    finally:
        audit.close()
        forwarder.down()
    # the oldest rows are kept: an outage's record starts where it began
    assert count_by_request(postgres_url) == {f"r{i}": 1 for i in range(20)}


def test_a_server_down_at_start_up_is_waited_for(postgres_url):
    forwarder = _forwarder_for(postgres_url)
    forwarder.down()
    audit = AuditLog(_through(forwarder, postgres_url)).start()  # starts anyway: the proxy must answer
    try:
        record(audit, "early")
        assert not audit.flush(timeout=1)
        forwarder.up()
        assert audit.flush(timeout=60)
    finally:
        audit.close()
        forwarder.down()
    assert count_by_request(postgres_url) == {"early": 1}


def test_the_writer_reconnects_after_a_real_server_restart(postgres_url):
    command = os.environ.get("COUCHGUARD_TEST_POSTGRES_RESTART")
    if not command:
        pytest.skip(
            "COUCHGUARD_TEST_POSTGRES_RESTART (a command that restarts the server) is not set; .ci/run sets "
            "it for the server it starts"
        )
    audit = AuditLog(postgres_url).start()
    try:
        record(audit, "before")
        assert audit.flush(timeout=30)
        subprocess.run(command, shell=True, check=True, cwd=Path(__file__).parents[2], timeout=120)
        for i in range(20):
            record(audit, f"after-{i}")
        assert audit.flush(timeout=60)
    finally:
        audit.close()
    assert count_by_request(postgres_url) == {"before": 1, **{f"after-{i}": 1 for i in range(20)}}
