"""Every value of the PII corpus (tests/data/pii/values.jsonl: phones, addresses, postal codes, emails, IBANs and
record numbers across nine locales) goes through the audit log with store_text on; the database then holds none of
them raw, in either text column."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from guard.audit import AuditLog

from .helpers import record, stored

CORPUS = Path(__file__).parents[1] / "data" / "pii" / "values.jsonl"


def corpus() -> list[dict]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_corpus_is_broad():
    rows = corpus()
    assert len(rows) >= 200
    assert all(row["value"] in row["sentence"] for row in rows)
    assert len({row["locale"] for row in rows}) >= 8
    assert {"phone", "street_address", "postal_code"} <= set(Counter(row["kind"] for row in rows))


def test_no_corpus_value_reaches_the_audit_database(database_url, redactor):
    rows = corpus()
    audit = AuditLog(database_url, store_text=True, redactor=lambda: redactor).start()
    try:
        for i, row in enumerate(rows):
            # the user's message, and the same text as what was delivered (an echo), so both columns are checked
            record(audit, f"pii-{i}", row["sentence"], rail="output", delivered=row["sentence"])
        assert audit.flush(timeout=300)
    finally:
        audit.close()
    texts = [(r["message_text"] or "") + "\n" + (r["delivered_text"] or "") for r in stored(database_url)]
    assert len(texts) == len(rows)
    dump = "\n".join(texts)
    leaked = [(row["kind"], row["locale"], row["value"]) for row in rows if row["value"] in dump]
    assert leaked == []
