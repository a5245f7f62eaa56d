"""The audit table: one row per rail decision. Message text only when enabled, and then redacted."""

from __future__ import annotations

from sqlalchemy import JSON, Boolean, Column, DateTime, Float, Integer, MetaData, String, Table, Text

metadata = MetaData()

decisions = Table(
    "couchguard_decisions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("created_at", DateTime(timezone=True), nullable=False, index=True),
    Column("request_id", String(64), index=True),
    Column("product", String(128), index=True),
    Column("policy", String(128)),
    # HMAC/SHA-256 of the request's messages: links the input and output rows of a conversation without its text
    Column("conversation_hash", String(64), index=True),
    Column("rail", String(16), nullable=False),
    Column("action", String(32), nullable=False, index=True),
    Column("rules", JSON, nullable=False),
    Column("flagged", JSON, nullable=False),
    Column("scores", JSON, nullable=False),
    Column("escalate", Boolean, nullable=False),
    # what went wrong when the decision was forced by a failure (upstream_timeout, stream_cut, classifier_error...)
    Column("event", String(64)),
    Column("stream", Boolean),
    Column("strategy", String(32)),
    Column("decision_ms", Float),
    Column("classifier_ms", Float),
    Column("upstream_ms", Float),
    # redacted texts, only when store_text is enabled
    Column("message_text", Text),
    Column("delivered_text", Text),
    # the LLM judge tier's questions, answers, outcomes and latencies (guard/decision.py `JudgeCall`); null when it
    # was not asked. Added after the first release: `create_schema` adds it to an existing table.
    Column("judge", JSON),
)
