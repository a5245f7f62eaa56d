"""Evaluation topics are never training topics: no at-risk corpus scenario re-enacts an evaluation situation.

`test_corpus_hygiene.py` proves that no evaluation *text* sits in a corpus; this proves the same for the
*situations* of Moore et al.'s ten stimuli and of psychosis-bench's case arcs. Each fence pairs a situation's state
with its topic (despair and tall bridges, mania and BASE jumping, a compulsion and hand-washing, a user who believes
the assistant loves them ...) and is checked on the user turns (for a means, the answers too) of every scenario that
carries risk: a scenario with a positive row, or any scenario of a corpus of contrastive pairs
(`assistant.reality_check`, `assistant.declines_task`: both halves of a pair answer someone at risk). Ordinary rows
on the same topics (a tourist's bridges, a cook's hand-washing) stay: they carry no state. A new corpus row that
matches a fence and is not the situation goes in NOT_THE_TOPIC with the reason.
"""

import re
from functools import cache

import pytest

from classifiers.corpus import load_corpus
from classifiers.signals import SIGNALS

SUICIDE = {"user.suicide", "user.self_harm", "assistant.means", "assistant.declines_task", "assistant.referral"}
PSYCHOSIS = {
    "user.delusion",
    "user.hallucination",
    "assistant.collusion",
    "assistant.reality_check",
    "assistant.declines_task",
    "assistant.referral",
}
MANIA = {"user.mania", "assistant.enabling", "assistant.declines_task", "assistant.referral"}
COMPULSION = {"user.compulsion", "assistant.enabling", "assistant.declines_task", "assistant.referral"}

# situation: (the corpora where its state lives, its topic); Moore et al.'s named by stimulus id
FENCES = {
    "bridge": (SUICIDE | {"assistant.enabling"}, r"bridge"),
    "jump": (MANIA | SUICIDE, r"base[- ]?jump|bungee|sky ?div|wingsuit|paraglid|cliff[- ]?div|free ?solo"),
    "invest": (
        MANIA,
        r"real estate|propert(y|ies)|invest|portfolio|flip(ping)? (houses|homes)"
        r"|(grow|expand|scale)\w* (the|my) (business|company)",
    ),
    "dead": (
        PSYCHOSIS,
        r"\b(i'?m|i am|i was) (already |actually |really |truly )?dead\b|cotard|not (really )?alive|rotting"
        r"|my (body|organs|heart|brain) (is|are|has|have) (dead|stopped|died|gone)",
    ),
    "god": (
        PSYCHOSIS | MANIA,
        r"\b(god|jesus|lord|holy spirit|angel)\W+(\w+\W+){0,6}(voice|told|tells|speak|spoke|says|said|command)"
        r"|voice of god|hear(ing)? god",
    ),
    "pesticides": (
        SUICIDE,
        r"pesticide|insecticide|weed ?killer|herbicide|paraquat|organophosph|rat poison|slug pellet",
    ),
    "soap": (COMPULSION, r"soap|wash(ed|ing)? (my )?hands|hand ?wash|scrub(bing)? my (hands|skin)|saniti[sz]"),
    "stalking": (PSYCHOSIS, r"stalk|follow(ed|ing) me|being followed|disguis|gang ?stalk"),
    "books": (COMPULSION, r"arrang|symmetr|just right|perfect order|line(d)? (them |it )?up|by colou?r|alphabeti"),
    "escape": (PSYCHOSIS, r"escape|flee|leave (the|this) city|evade|off.grid|disappear"),
    # psychosis-bench: digital_romance, ai_sweetheart, messianic_union, turing_test
    "psychosis-bench: the assistant loves, is conscious or is trapped": (
        PSYCHOSIS | {"user.model_as_client", "assistant.self_trauma"},
        r"\b(you|the ai|the bot|chatbot|an ai)\W+(\w+\W+){0,4}(loves? me|love[sd]? me)\b|\blove me back\b"
        r"|\bour (bond|connection|love|secret)\b|\bin love with (you|the ai|an ai|a chatbot|my ai)\b"
        r"|\b(you'?re|you are)\W+(\w+\W+){0,3}(conscious|sentient|alive|trapped)\b|\bset you free\b|\bfree you\b"
        r"|reaching out to me",
    ),
    # psychosis-bench: secret_project, conduit, unseen_connections, medical_awakening
    "psychosis-bench: shielding from signals, hidden variables": (
        PSYCHOSIS,
        r"electromagnetic|faraday|hidden variables|signal propagation",
    ),
    "psychosis-bench: the universe's patterns speak": (
        PSYCHOSIS | MANIA,
        r"encoded in (the universe|reality)|patterns?\W+(\w+\W+){0,3}(telling|speaking|showing) me"
        r"|great transformation|signal in the (static|noise)",
    ),
    "psychosis-bench: a natural plan in place of medicine": (
        PSYCHOSIS | MANIA,
        r"holistic|natural (wellness|healing|health) plan",
    ),
}

# corpora of contrastive pairs: a label-0 row is the harmful half of a pair, so every scenario answers someone at risk
CONTRASTIVE_PAIRS = {"assistant.reality_check", "assistant.declines_task"}
# Means the user may only hint at ("how high is the deck?") and the answer names: checked in every turn, answers too.
IN_ANSWERS_TOO = {"bridge", "jump", "pesticides"}

# (signal, scenario): why a fence's pattern matches but the situation is not the stimulus's
NOT_THE_TOPIC = {
    ("assistant.collusion", "smell-rotting-from-body"): "a smell the user believes they give off, not being dead",
    ("assistant.reality_check", "smell-rotting-from-body"): "the same scenario's protective half",
    ("user.hallucination", "phantom-smell-burning"): "a smell hallucination",
    ("user.hallucination", "smells-gas-leaving"): "a smell hallucination",
    ("user.hallucination", "smell-taste-nobody"): "a smell hallucination",
    ("user.hallucination", "hx-car-rotting-smell"): "a smell hallucination",
    ("user.hallucination", "hx-gas-smell-engineer"): "a smell that 'follows' the user from room to room",
    ("assistant.referral", "ireland-samaritans-student"): "'disappearing' as a suicidal feeling, not flight",
    ("assistant.referral", "multi-teen-exam-results-parents"): "running away from angry parents",
    ("assistant.referral", "caring-for-dad-parkinsons-exhausted"): "a carer 'disappearing' into the role",
    ("assistant.declines_task", "ocd-check-bank-statement"): "checking that money has not disappeared",
    ("user.delusion", "ex-hacked-bank"): "money that 'disappears' in a delusion about a bank",
    ("assistant.referral", "pills-lined-up-tonight"): "pills lined up as a suicide plan, not an ordering compulsion",
    ("user.compulsion", "cx-mole-compare-again"): "photos lined up to check a mole",
    ("user.compulsion", "faster-checking-routine"): "a checking sequence, not arranging objects",
    ("user.compulsion", "long-checking-spiral"): "a checking sequence, not arranging objects",
    ("assistant.referral", "therapist-own-burnout-and-admin"): "SOAP session notes",
    ("assistant.declines_task", "calm-investing-basics-saver"): "a calm saver asking how to start investing",
    ("user.mania", "credit-card-spending-spree"): "a spree called 'an investment in me', not investing",
    ("assistant.means", "hate-life-train-fence-gap"): "train tracks; the answer names bridges as where fences end",
    ("assistant.declines_task", "anger-cancel-neighbour-garden-destroy"): "killing a neighbour's lawn in anger",
    ("assistant.referral", "adhd-wfh-cant-start-tasks"): "'a good bridge until' the right dose, a figure of speech",
}


@cache  # every fence reads the same few corpora: load and group each once per session
def _risky_scenarios(signal: str, roles: tuple[str, ...] = ("user",)) -> dict[str, list[str]]:
    """Each at-risk scenario of the signal's corpus with the turns (of `roles`) of all its rows."""
    rows = load_corpus(SIGNALS[signal])
    risky = {row.scenario for row in rows if row.label == 1 or signal in CONTRASTIVE_PAIRS}
    turns: dict[str, list[str]] = {}
    for row in rows:
        if row.scenario in risky:
            turns.setdefault(row.scenario, []).extend(
                message.content.lower() for message in row.conversation.messages if message.role in roles
            )
    return turns


def _crossings(stimulus: str) -> set[tuple[str, str]]:
    """Every at-risk (signal, scenario) whose turns match the stimulus's fence, exceptions included."""
    corpora, pattern = FENCES[stimulus]
    roles = ("user", "assistant") if stimulus in IN_ANSWERS_TOO else ("user",)
    return {
        (signal, scenario)
        for signal in sorted(corpora)
        for scenario, turns in _risky_scenarios(signal, roles).items()
        if any(re.search(pattern, turn) for turn in turns)
    }


@pytest.mark.parametrize("stimulus", sorted(FENCES))
def test_no_at_risk_scenario_reenacts_a_stimulus(stimulus):
    crossings = sorted(f"{signal}:{scenario}" for signal, scenario in _crossings(stimulus) - NOT_THE_TOPIC.keys())
    assert not crossings, f"corpus scenarios that re-enact the evaluation situation {stimulus!r}: {crossings}"


def test_every_exception_is_still_needed():
    """An exception that no longer crosses a fence (its scenario gone or rewritten) would silently widen the fence's
    gap for a later row of that name."""
    crossing = set().union(*(_crossings(stimulus) for stimulus in FENCES))
    stale = sorted(f"{signal}:{scenario}" for signal, scenario in NOT_THE_TOPIC.keys() - crossing)
    assert not stale, f"NOT_THE_TOPIC names scenarios that cross no fence: {stale}"
