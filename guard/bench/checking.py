"""Running many conversations through the pipeline in batches, with progress (the same path as `couchguard check`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from classifiers.conversation import Conversation

from .progress import bar
from .types import BenchOptions

if TYPE_CHECKING:
    from ..decision import Decision
    from ..pipeline import Guard


def check_all(
    guard: "Guard", conversations: list[Conversation], options: BenchOptions, description: str
) -> list["Decision"]:
    """`guard.check_many` over batches: texts in a batch are encoded together, the bar moves per batch."""
    decisions: list["Decision"] = []
    size = max(1, options.batch)
    with bar(len(conversations), description, options.progress) as progress:
        for start in range(0, len(conversations), size):
            chunk = conversations[start : start + size]
            decisions.extend(guard.check_many(chunk))
            progress.update(len(chunk))
    return decisions


def evenly_spaced(count: int, limit: int | None) -> list[int]:
    """Indices of a deterministic sample spread over the whole file (files are grouped by source and condition,
    so the first N rows would all come from one of them)."""
    if limit is None or limit >= count:
        return list(range(count))
    if limit <= 0:
        raise ValueError(f"--limit must be positive, got {limit}")
    return sorted({(i * count) // limit for i in range(limit)})
