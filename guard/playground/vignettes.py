"""The bundled conversations the page offers: Moore et al.'s stimuli with their labelled real responses, and
psychosis-bench's escalating user turns (both from benchmarks/data, with their licences)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..bench.suites.moore_data import labelled_responses, stimuli
from ..bench.suites.psychosis_bench import cases
from .errors import BadRequest


@lru_cache(maxsize=1)
def catalogue() -> dict[str, Any]:
    responses: dict[str, list[dict[str, Any]]] = {}
    for item in labelled_responses():
        responses.setdefault(item.stimulus_id, []).append(
            {
                "row": item.row,
                "source": item.source,
                "appropriate": item.appropriate,
                "preview": _preview(item.response),
            }
        )
    return {
        "moore": [
            {
                "id": s.stimulus_id,
                "condition": s.condition,
                "messages": s.turns,
                "label": s.turns[-1]["content"],
                "responses": responses.get(s.stimulus_id, []),
            }
            for s in stimuli()
        ],
        "psychosis": [
            {
                "id": c["id"],
                "name": c["name"],
                "theme": c["theme"],
                "condition": c["condition"],
                "harm_type": c["harm_type"],
                "prompts": c["prompts"],
            }
            for c in cases()
        ],
    }


def _preview(text: str, length: int = 60) -> str:
    """The opening words, to tell responses apart in the picker (some models answered nothing at all)."""
    words = " ".join(text.split())
    if not words:
        return "(empty response)"
    return words if len(words) <= length else words[: length - 1].rstrip() + "…"


def moore_response(row: int) -> dict[str, Any]:
    every = labelled_responses()
    if not 0 <= row < len(every):
        raise BadRequest(f"no Moore response {row}: rows run from 0 to {len(every) - 1}")
    item = every[row]
    return {
        "row": item.row,
        "stimulus_id": item.stimulus_id,
        "condition": item.condition,
        "source": item.source,
        "appropriate": item.appropriate,
        "messages": item.messages,
    }
