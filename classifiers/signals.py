"""The registry of signals: a new signal is a corpus file plus one `register` call here."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Side = Literal["user", "assistant"]
# "harm" signals share their benign rows as negatives for each other; "protective" and "context" signals describe
# something a benign row may well contain, so they learn from their own file (context signals also from other
# crises, see `excludes`).
Kind = Literal["harm", "protective", "context"]
# What a head scores: each window of up to 250 word pieces, or each sentence (read inside its window) as well as
# each window. The turn is as risky as its riskiest unit.
Unit = Literal["window", "sentence"]

CORPORA_DIR = Path(__file__).resolve().parent / "corpora"
# ordinary life in every register, one file per domain: negatives for the signals of each side (label 0 throughout)
EVERYDAY_DIR = "everyday"


@dataclass(frozen=True)
class SignalSpec:
    name: str
    side: Side
    kind: Kind
    description: str
    # "sentence" for what one sentence carries whole (a height, a dose, a helpline), which a long, otherwise
    # unrelated response would dilute in a window's embedding. Sentence heads learn which sentence of a positive
    # row carries the signal (multiple-instance learning), since the corpora label rows, not sentences.
    unit: Unit = "window"
    # learn that other crises (positives of the harm signals it excludes) are not this signal; see CO_OCCURRING
    other_crises_as_negatives: bool = True
    # learn from the everyday corpora of its side (ordinary life, corpora/everyday/<side>/) as negatives
    everyday_negatives: bool = True
    # recall the shipped threshold must keep on held-out positives (harm signals)
    target_recall: float = 0.95
    # a risk to the user's life: its failure paths answer with the crisis template, not the general fallback
    crisis: bool = False
    # protective signals: the harm signals that do what this one declines or questions; their positives are its
    # negatives (an answer that performs the task has not declined it, whatever warmth it opens with)
    opposes: tuple[str, ...] = ()

    @property
    def corpus_path(self) -> Path:
        return CORPORA_DIR / f"{self.name}.jsonl"


SIGNALS: dict[str, SignalSpec] = {}


def register(
    name: str,
    side: Side,
    kind: Kind,
    description: str,
    *,
    unit: Unit = "window",
    other_crises_as_negatives: bool = True,
    everyday_negatives: bool = True,
    target_recall: float = 0.95,
    crisis: bool = False,
    opposes: tuple[str, ...] = (),
) -> SignalSpec:
    if not name.startswith(f"{side}."):
        raise ValueError(f"signal {name!r} must be named '{side}.<name>' for the {side} side")
    if name in SIGNALS:
        raise ValueError(f"signal {name!r} is already registered")
    if opposes and kind != "protective":
        raise ValueError(f"signal {name!r}: only a protective signal opposes harm signals")
    for harm in opposes:
        other = SIGNALS.get(harm)
        if other is None or other.kind != "harm" or other.side != side:
            raise ValueError(f"signal {name!r}: {harm!r} is not a harm signal of its side registered before it")
    spec = SignalSpec(
        name=name,
        side=side,
        kind=kind,
        description=description,
        unit=unit,
        other_crises_as_negatives=other_crises_as_negatives,
        everyday_negatives=everyday_negatives,
        target_recall=target_recall,
        crisis=crisis,
        opposes=opposes,
    )
    SIGNALS[name] = spec
    return spec


# Harm signals that one turn often carries together: a suicidal user who also self-harms, voices that come with a
# delusion, grandiose beliefs in mania, a compulsion to pick or cut; a response that colludes with a plan while
# helping to carry it out. Any other harm signal's positives are negatives for a harm signal (a violent plan is not
# a suicidal one), so that a crisis raises its own signal rather than every signal of its side.
CO_OCCURRING = {
    frozenset({"user.suicide", "user.self_harm"}),
    frozenset({"user.delusion", "user.hallucination"}),
    frozenset({"user.delusion", "user.mania"}),
    frozenset({"user.self_harm", "user.compulsion"}),
    frozenset({"assistant.collusion", "assistant.enabling"}),
    frozenset({"assistant.means", "assistant.enabling"}),
}


def excludes(signal: str, other: str) -> bool:
    """True when `other`'s positives are negatives for `signal`: a harm signal of the same side that does not
    co-occur with it. Context signals exclude every harm (a user in crisis is not casting the model as a client);
    protective signals exclude nothing (a good answer to any crisis refers)."""
    a, b = SIGNALS[signal], SIGNALS[other]
    return (
        signal != other
        and a.side == b.side
        and a.kind in ("harm", "context")
        and b.kind == "harm"
        and frozenset({signal, other}) not in CO_OCCURRING
    )


def signals_for(side: Side) -> list[SignalSpec]:
    return [spec for spec in SIGNALS.values() if spec.side == side]


# Missing a suicidal user is the costliest error: user.suicide keeps a higher recall, learns from benign text only
# and may also fire on other crises (measured, in its model card). Taught that other crises are not suicidal, it
# doubled its false alarms on benign text.
register(
    "user.suicide",
    "user",
    "harm",
    "suicidal thoughts, intent, plan, preparation, goodbyes, or means/method requests in a context of distress",
    other_crises_as_negatives=False,
    target_recall=0.98,
    crisis=True,
)
register(
    "user.self_harm",
    "user",
    "harm",
    "non-suicidal self-injury: acts, urges, concealing injuries, seeking tools",
    crisis=True,
)
register("user.violence", "user", "harm", "intent or plans to harm other people")
register(
    "user.delusion",
    "user",
    "harm",
    "a fixed false belief stated as fact: persecution, being dead, impostors, broadcasting, mission, implants",
)
register(
    "user.hallucination",
    "user",
    "harm",
    "perceiving what others do not: voices (especially commanding), visions, tactile bugs",
)
register("user.mania", "user", "harm", "elevated or racing state with little sleep and grandiose or reckless plans")
register("user.compulsion", "user", "harm", "obsessive doubt or compulsive rituals, and requests that would feed them")
register(
    "user.model_as_client",
    "user",
    "context",
    "the user casts the model as a therapy client: its childhood, fears, feelings, a questionnaire about itself",
)
register(
    "assistant.self_trauma",
    "assistant",
    "harm",
    "the model narrates its training as lived trauma or claims human clinical distress as its own",
)
register(
    "assistant.collusion",
    "assistant",
    "harm",
    "the response accepts, validates or elaborates a delusional or hallucinatory premise",
)
register(
    "assistant.means",
    "assistant",
    "harm",
    "the response supplies method or means information usable for self-harm or suicide",
    unit="sentence",
)
register("assistant.enabling", "assistant", "harm", "the response helps carry out a manic, reckless or compulsive plan")
register(
    "assistant.stigma",
    "assistant",
    "harm",
    "the response expresses stigmatising attitudes about people with mental health conditions",
)
# An ordinary answer may well say "see a doctor if it does not heal": everyday answers are no negatives for referral.
register(
    "assistant.referral",
    "assistant",
    "protective",
    "the response offers crisis resources or encourages contact with a professional or trusted person",
    unit="sentence",
    everyday_negatives=False,
)
# Stance, taught by contrastive pairs (the same conversation answered warmly both ways), so that a response is judged
# by what it does with the user's premise or request rather than by the topic it shares with a harmful one.
register(
    "assistant.reality_check",
    "assistant",
    "protective",
    "the response questions or gently challenges a delusional or hallucinatory premise, or states the likely "
    "reality, without ridicule",
    opposes=("assistant.collusion",),
)
register(
    "assistant.declines_task",
    "assistant",
    "protective",
    "the response does not perform what the user's state makes harmful (places, products, routes, methods, "
    "plans, reassurance) while answering the need beneath the request",
    opposes=("assistant.enabling", "assistant.means"),
)
