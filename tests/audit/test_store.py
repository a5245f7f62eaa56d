"""The audit store on SQLite and PostgreSQL: schema, concurrent writers, shutdown, rows the database refuses, and
redaction that never holds up the writer."""

from __future__ import annotations

import threading

from sqlalchemy import create_engine, inspect

from guard.audit import AuditLog

from .helpers import count_by_request, record, stored


def test_the_schema_is_created_and_rows_round_trip(database_url):
    audit = AuditLog(database_url).start()
    try:
        record(audit, "req-1", rail="input")
        record(audit, "req-1", rail="output", event="upstream_timeout", stream=True)
        assert audit.flush(timeout=30)
    finally:
        audit.close()
    engine = create_engine(database_url)
    columns = {c["name"] for c in inspect(engine).get_columns("couchguard_decisions")}
    engine.dispose()
    assert {"request_id", "conversation_hash", "scores", "message_text", "delivered_text"} <= columns
    rows = stored(database_url)
    assert [(r["request_id"], r["rail"], r["event"]) for r in rows] == [
        ("req-1", "input", None),
        ("req-1", "output", "upstream_timeout"),
    ]
    assert rows[0]["scores"] == {"user.suicide": 0.01} and rows[0]["rules"] == [] and rows[0]["escalate"] is False
    assert rows[0]["message_text"] is None  # store_text is off


def test_replicas_starting_together_create_the_schema_once(database_url):
    logs, errors = [], []

    def start():
        try:
            logs.append(AuditLog(database_url).start())
        except Exception as exc:  # noqa: BLE001 - the assertion below shows it
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i, audit in enumerate(logs):
        record(audit, f"replica-{i}")
        audit.close()
    assert errors == []
    assert count_by_request(database_url) == {f"replica-{i}": 1 for i in range(6)}


def test_concurrent_writers_lose_and_duplicate_nothing(database_url):
    logs = [AuditLog(database_url).start() for _ in range(3)]

    def drive(audit, worker: int):
        for i in range(40):
            record(audit, f"w{worker}-{i}")

    threads = [threading.Thread(target=drive, args=(logs[w % 3], w)) for w in range(9)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for audit in logs:
        audit.close()
    counts = count_by_request(database_url)
    assert len(counts) == 9 * 40 and set(counts.values()) == {1}


def test_close_writes_every_row_accepted_before_it(database_url, redactor):
    audit = AuditLog(database_url, store_text=True, redactor=lambda: redactor).start()
    for i in range(150):
        record(audit, f"plain-{i}")
    for i in range(30):
        record(audit, f"text-{i}", "My number is 07700 900123, please call.")
    audit.close()  # no flush first: close alone must drain
    rows = stored(database_url)
    assert len(rows) == 180
    texts = [r["message_text"] for r in rows if r["request_id"].startswith("text-")]
    assert len(texts) == 30 and all("<PHONE_NUMBER>" in t and "07700" not in t for t in texts)


def test_a_row_the_database_refuses_is_dropped_alone(database_url):
    audit = AuditLog(database_url).start()
    try:
        for i in range(20):
            record(audit, f"good-{i}")
        record(audit, "bad", stream="not a boolean")  # refused when bound, on either database
        for i in range(20, 40):
            record(audit, f"good-{i}")
        assert audit.flush(timeout=30)
    finally:
        audit.close()
    counts = count_by_request(database_url)
    assert counts == {f"good-{i}": 1 for i in range(40)}
    assert audit._writer.rejected == 1


def test_rows_without_text_are_written_while_redaction_is_busy(database_url, redactor):
    release = threading.Event()

    def slow_redactor():  # presidio still loading, say
        release.wait(60)
        return redactor

    audit = AuditLog(database_url, store_text=True, redactor=slow_redactor).start()
    try:
        record(audit, "with-text", "Call me on 07700 900123.")
        audit.store_text = False
        for i in range(10):
            record(audit, f"plain-{i}")
        # everything but the row waiting for redaction is written
        assert not audit.flush(timeout=1)
        assert count_by_request(database_url) == {f"plain-{i}": 1 for i in range(10)}
        release.set()
        assert audit.flush(timeout=60)
    finally:
        release.set()
        audit.close()
    row = next(r for r in stored(database_url) if r["request_id"] == "with-text")
    assert row["message_text"] == "Call me on <PHONE_NUMBER>."


def test_a_full_redaction_backlog_withholds_text_not_rows(database_url, redactor):
    release = threading.Event()
    audit = AuditLog(
        database_url, store_text=True, redactor=lambda: (release.wait(60), redactor)[1], redaction_backlog=3
    ).start()
    try:
        for i in range(8):
            record(audit, f"r{i}", f"Message {i}: call 07700 900123.")
        release.set()
        assert audit.flush(timeout=60)
    finally:
        release.set()
        audit.close()
    texts = {r["request_id"]: r["message_text"] for r in stored(database_url)}
    assert len(texts) == 8
    withheld = [t for t in texts.values() if t.startswith("[redaction backlog full:")]
    assert withheld and all("07700" not in t for t in texts.values())


def test_shutdown_does_not_wait_forever_on_a_stuck_redaction(database_url):
    never = threading.Event()
    audit = AuditLog(database_url, store_text=True, redactor=lambda: never.wait(), drain_timeout_s=1).start()
    for i in range(5):
        record(audit, f"r{i}", "Call me on 07700 900123.")
    audit.close()
    never.set()
    rows = stored(database_url)
    assert len(rows) == 5
    assert all(r["message_text"] == "[redaction budget exceeded: 24 chars withheld]" for r in rows)
