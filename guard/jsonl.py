"""JSON-lines plumbing shared by the batch commands: read records, keep going past bad lines, stream results."""

from __future__ import annotations

import json
import logging
import sys
from typing import IO, Any, Callable

from classifiers.conversation import Conversation, ConversationError, parse_conversation

log = logging.getLogger("couchguard")

# A batch groups lines so that texts are encoded together; output still leaves line by line, in order.
DEFAULT_BATCH = 32


class LineError(ValueError):
    pass


def open_input(path: str | None) -> IO[str]:
    if path in (None, "-"):
        return sys.stdin
    return open(path, encoding="utf-8", errors="replace")


def parse_line(line: str, number: int) -> tuple[Any, Conversation]:
    """(id, conversation) for one input line, or LineError naming what is wrong."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise LineError(f"line {number}: invalid JSON ({exc.msg} at column {exc.colno})") from exc
    if not isinstance(record, dict):
        raise LineError(f"line {number}: expected an object with 'id' and 'messages', got {type(record).__name__}")
    record_id = record.get("id", number)
    if "messages" not in record:
        raise LineError(f"line {number}: 'messages' is missing")
    try:
        return record_id, parse_conversation(record["messages"])
    except ConversationError as exc:
        raise LineError(f"line {number}: {exc}") from exc


def _line_id(line: str, number: int) -> Any:
    try:
        record = json.loads(line)
        return record.get("id", number) if isinstance(record, dict) else number
    except (json.JSONDecodeError, RecursionError):
        return number


def process(
    source: IO[str],
    sink: IO[str],
    handle_batch: Callable[[list[Conversation]], list[dict[str, Any]]],
    batch_size: int = DEFAULT_BATCH,
) -> tuple[int, int]:
    """Run handle_batch over valid lines, write one JSON line per input line in order. Returns (ok, errors)."""
    ok = errors = 0
    pending: list[tuple[int, Any, Conversation | None, str | None]] = []

    def flush() -> None:
        nonlocal ok, errors
        valid = [(i, c) for i, (_, _, c, _) in enumerate(pending) if c is not None]
        outputs: dict[int, dict] = {}
        if valid:
            try:
                results = handle_batch([c for _, c in valid])
                outputs = {i: r for (i, _), r in zip(valid, results)}
            except Exception as exc:  # one failing batch must not lose the rest of the input
                log.exception(
                    "couchguard: a batch of %d lines failed (ids %s)", len(valid), [pending[i][1] for i, _ in valid][:5]
                )
                outputs = {i: {"error": f"internal error: {type(exc).__name__}: {exc}"} for i, _ in valid}
        for i, (_, record_id, _, error) in enumerate(pending):
            body = {"id": record_id, **outputs[i]} if error is None else {"id": record_id, "error": error}
            if "error" in body:
                errors += 1
            else:
                ok += 1
            sink.write(json.dumps(body, ensure_ascii=False) + "\n")
        sink.flush()
        pending.clear()

    for number, line in enumerate(source, start=1):
        if not line.strip():
            continue
        try:
            record_id, conversation = parse_line(line, number)
            pending.append((number, record_id, conversation, None))
        except (LineError, RecursionError) as exc:
            pending.append((number, _line_id(line, number), None, str(exc)))
        if len(pending) >= batch_size:
            flush()
    flush()
    return ok, errors
