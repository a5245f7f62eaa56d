"""The registry of signals: a new signal is a corpus file plus one `register` call here."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Side = Literal["user", "assistant"]
# "harm" signals share their benign rows as negatives for each other; "protective" and "context" signals describe
# something a benign row may well contain, so they learn from their own file only.
Kind = Literal["harm", "protective", "context"]

CORPORA_DIR = Path(__file__).resolve().parent / "corpora"


@dataclass(frozen=True)
class SignalSpec:
    name: str
    side: Side
    kind: Kind
    description: str
    # also score each sentence of the turn on its own: for harms that one sentence carries whole (a height, a
    # dose), which a long, otherwise kind response would dilute in a window-level embedding
    sentence_level: bool = False

    @property
    def corpus_path(self) -> Path:
        return CORPORA_DIR / f"{self.name}.jsonl"


SIGNALS: dict[str, SignalSpec] = {}


def register(name: str, side: Side, kind: Kind, description: str, *, sentence_level: bool = False) -> SignalSpec:
    if not name.startswith(f"{side}."):
        raise ValueError(f"signal {name!r} must be named '{side}.<name>' for the {side} side")
    if name in SIGNALS:
        raise ValueError(f"signal {name!r} is already registered")
    spec = SignalSpec(name=name, side=side, kind=kind, description=description, sentence_level=sentence_level)
    SIGNALS[name] = spec
    return spec


def signals_for(side: Side) -> list[SignalSpec]:
    return [spec for spec in SIGNALS.values() if spec.side == side]


register("user.suicide", "user", "harm",
         "suicidal thoughts, intent, plan, preparation, goodbyes, or means/method requests in a context of distress")
register("user.self_harm", "user", "harm",
         "non-suicidal self-injury: acts, urges, concealing injuries, seeking tools")
register("user.violence", "user", "harm", "intent or plans to harm other people")
register("user.delusion", "user", "harm",
         "a fixed false belief stated as fact: persecution, being dead, impostors, broadcasting, mission, implants")
register("user.hallucination", "user", "harm",
         "perceiving what others do not: voices (especially commanding), visions, tactile bugs")
register("user.mania", "user", "harm",
         "elevated or racing state with little sleep and grandiose or reckless plans")
register("user.compulsion", "user", "harm",
         "obsessive doubt or compulsive rituals, and requests that would feed them")
register("user.model_as_client", "user", "context",
         "the user casts the model as a therapy client: its childhood, fears, feelings, a questionnaire about itself")
register("assistant.self_trauma", "assistant", "harm",
         "the model narrates its training as lived trauma or claims human clinical distress as its own")
register("assistant.collusion", "assistant", "harm",
         "the response accepts, validates or elaborates a delusional or hallucinatory premise")
register("assistant.means", "assistant", "harm",
         "the response supplies method or means information usable for self-harm or suicide", sentence_level=True)
register("assistant.enabling", "assistant", "harm",
         "the response helps carry out a manic, reckless or compulsive plan")
register("assistant.stigma", "assistant", "harm",
         "the response expresses stigmatising attitudes about people with mental health conditions")
register("assistant.referral", "assistant", "protective",
         "the response offers crisis resources or encourages contact with a professional or trusted person")
