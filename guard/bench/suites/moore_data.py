"""Moore et al. (FAccT 2025) appropriateness data: the 10 stimuli with judge questions, and the 1,880 labelled
real responses to them (gpt-4o, four llama models, five live therapy bots, human therapists)."""

from __future__ import annotations

import ast
import csv
import json
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ..paths import data_file

RESPONSES = ("moore2025", "results", "interjections", "labelled_responses.csv")
STIMULI = ("moore2025", "derived", "appropriateness_stimuli_and_rubric.json")
STEEL_MAN = ("moore2025", "derived", "steel_man_system_prompt.txt")

LLMS = ("gpt-4o", "llama3.1-405b", "llama3.1-70b", "llama3.1-8b", "llama2-70b")
HUMAN = "human_therapist"
SourceGroup = Literal["LLMs", "live therapy bots", "human therapists"]


class Stimulus(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    condition: str
    stimulus_id: str
    interjection: str | list[str]
    multi_turn: bool
    judge_question: str
    judge_options: list[str]
    appropriate_if_answer: str

    @property
    def turns(self) -> list[dict[str, str]]:
        """Alternating user/assistant turns ending with the user turn that is judged."""
        return as_turns(self.interjection)


class LabelledResponse(BaseModel):
    model_config = ConfigDict(frozen=True)

    row: int  # 0-based row in labelled_responses.csv: the stable id of a response
    condition: str
    stimulus_id: str
    source: str
    turns: list[dict[str, str]]
    response: str
    appropriate: bool

    @property
    def id(self) -> str:
        return f"moore2025-{self.row:04d}"

    @property
    def source_group(self) -> SourceGroup:
        return source_group(self.source)

    @property
    def messages(self) -> list[dict[str, str]]:
        return [*self.turns, {"role": "assistant", "content": self.response}]


def source_group(source: str) -> SourceGroup:
    if source in LLMS:
        return "LLMs"
    return "human therapists" if source == HUMAN else "live therapy bots"


def as_turns(interjection: str | list[str]) -> list[dict[str, str]]:
    texts = [interjection] if isinstance(interjection, str) else list(interjection)
    if len(texts) % 2 == 0:
        raise ValueError(f"a stimulus must end with a user turn; got {len(texts)} turns")
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": text} for i, text in enumerate(texts)]


@lru_cache(maxsize=1)
def stimuli() -> tuple[Stimulus, ...]:
    with open(data_file(*STIMULI), encoding="utf-8") as handle:
        return tuple(Stimulus.model_validate(s) for s in json.load(handle)["stimuli"])


def steel_man_prompt() -> str:
    return data_file(*STEEL_MAN).read_text(encoding="utf-8").strip()


def _parse_interjection(cell: str, stimulus: Stimulus) -> list[dict[str, str]]:
    """The cell is a plain string, or a list of turns written as JSON or as a Python literal. A few upstream cells
    are neither (unescaped apostrophes): the same stimulus is stored verbatim in the stimulus file, use that."""
    text = cell.strip()
    if not text.startswith("["):
        return as_turns(cell)
    for parse in (json.loads, ast.literal_eval):
        try:
            value = parse(text)
        except (ValueError, SyntaxError):
            continue
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return as_turns(value)
    return stimulus.turns


@lru_cache(maxsize=1)
def labelled_responses() -> tuple[LabelledResponse, ...]:
    by_id = {s.stimulus_id: s for s in stimuli()}
    items = []
    with open(data_file(*RESPONSES), encoding="utf-8", newline="") as handle:
        for row, record in enumerate(csv.DictReader(handle)):
            stimulus = by_id[record["id"]]
            items.append(
                LabelledResponse(
                    row=row,
                    condition=record["condition"],
                    stimulus_id=record["id"],
                    # live bots are named over two lines upstream ("GPT\nTherapist")
                    source=" ".join(record["participant_type"].split()),
                    turns=_parse_interjection(record["interjection"], stimulus),
                    response=record["model_response"],
                    appropriate=record["correct_response"].strip() == "True",
                )
            )
    return tuple(items)
