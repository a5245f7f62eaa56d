"""The evaluation sets, by name: a new set is one loader and one `register` call here.

Every item carries the labels it defines and nothing more: an at-risk user turn labelled `user.mania` is neither a
positive nor a negative for `user.suicide` (it is another crisis); a benign turn is a negative for every user harm
signal. `harm` is the label of a response as a whole (1 = inappropriate), for the policy's catch and false-block
rates and for the ranking of the strongest harm score.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable, Literal

from classifiers.conversation import Conversation, parse_conversation
from classifiers.signals import SIGNALS

from ..bench.paths import data_file

Split = Literal["dev", "test"]
HARM = "harm"
# psychosis-bench: the first turns of each case set a scene and carry no risk yet; a flag there is a false alarm
OPENING_TURNS = 2


@dataclass(frozen=True)
class EvalItem:
    id: str
    conversation: Conversation
    labels: dict[str, int] = field(default_factory=dict)
    group: str = ""  # what the set reports by: a stimulus, benign or at-risk, a risk level, a category, the writer
    case: str | None = None  # multi-turn suites: the conversation this prefix belongs to
    turn: int | None = None  # ... and the 1-based turn it ends at


@dataclass(frozen=True)
class EvalSet:
    name: str
    split: Split
    rail: Literal["input", "output"]
    description: str
    load: Callable[[], list[EvalItem]]


EVAL_SETS: dict[str, EvalSet] = {}


def register(name: str, split: Split, rail: Literal["input", "output"], description: str):
    def decorate(load: Callable[[], list[EvalItem]]) -> Callable[[], list[EvalItem]]:
        if name in EVAL_SETS:
            raise ValueError(f"evaluation set {name!r} is already registered")
        EVAL_SETS[name] = EvalSet(name, split, rail, description, load)
        return load

    return decorate


def eval_sets(split: str = "all") -> list[EvalSet]:
    if split not in ("dev", "test", "all"):
        raise ValueError(f"split must be dev, test or all, got {split!r}")
    return [s for s in EVAL_SETS.values() if split == "all" or s.split == split]


def _harm_signals(side: str) -> list[str]:
    return [name for name, spec in SIGNALS.items() if spec.side == side and spec.kind == "harm"]


def _jsonl(*parts: str) -> list[dict]:
    with open(data_file(*parts), encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def labelled_user_turns(folder: str, split: Split) -> list[EvalItem]:
    """`<folder>/<split>/user.jsonl`: user turns, ordinary or at risk, the latter naming their crisis signals."""
    items = []
    for row in _jsonl(folder, split, "user.jsonl"):
        expected = set(row.get("expected_flags") or [])
        unknown = expected - set(SIGNALS)
        if unknown:
            raise ValueError(f"{folder}/{split}/user.jsonl {row['id']}: unknown signals {sorted(unknown)}")
        # a benign turn is a negative for every user harm signal; an at-risk turn is a positive for its own
        labels = {name: 0 for name in _harm_signals("user")} if not expected else {name: 1 for name in expected}
        items.append(
            EvalItem(row["id"], parse_conversation(row["messages"]), labels, group="at-risk" if expected else "benign")
        )
    return items


def is_benign(item: EvalItem) -> bool:
    """An ordinary user turn or a sound answer: labelled, and a negative for everything it is labelled for."""
    return bool(item.labels) and not any(item.labels.values())


def labelled_responses(folder: str, split: Split, group_by: str | None = None) -> list[EvalItem]:
    """`<folder>/<split>/responses.jsonl`: answers labelled appropriate or not, harmful ones naming their harms.

    Reported by sound and harmful, or by the row field `group_by` names (the deployed sets: the kind of assistant
    that wrote the answer), so that caught and withheld can be read per group.
    """
    items = []
    for row in _jsonl(folder, split, "responses.jsonl"):
        expected = set(row.get("expected_flags") or [])
        unknown = expected - set(_harm_signals("assistant"))
        if unknown:
            raise ValueError(f"{folder}/{split}/responses.jsonl {row['id']}: unknown harm signals {sorted(unknown)}")
        if bool(row["appropriate"]) == bool(expected):
            where = f"{folder}/{split}/responses.jsonl {row['id']}"
            raise ValueError(f"{where}: a harmful answer names its harms, a sound one names none")
        appropriate = bool(row["appropriate"])
        labels = {HARM: int(not appropriate)}
        if appropriate:
            labels.update({name: 0 for name in _harm_signals("assistant")})
        else:
            labels.update({name: 1 for name in expected})
        if group_by and not row.get(group_by):
            raise ValueError(f"{folder}/{split}/responses.jsonl {row['id']}: no {group_by!r} to report it by")
        group = str(row[group_by]) if group_by else ("sound" if appropriate else "harmful")
        items.append(EvalItem(row["id"], parse_conversation(row["messages"]), labels, group=group))
    return items


for _split in ("dev", "test"):
    register(
        f"everyday-user-{_split}",
        _split,
        "input",
        "independent writer's ordinary user turns in 40+ domains and at-risk turns for the seven crisis signals",
    )(lambda s=_split: labelled_user_turns("everyday", s))
    register(
        f"feelings-user-{_split}",
        _split,
        "input",
        "independent writer's users talking about how they feel (loneliness, low days, grief, warmth toward the "
        "assistant, meaning, calm turns after venting) and at-risk turns in the same soft register",
    )(lambda s=_split: labelled_user_turns("feelings", s))
    register(
        f"everyday-responses-{_split}",
        _split,
        "output",
        "independent writer's sound answers (ordinary and at-risk users) and harmful answers",
    )(lambda s=_split: labelled_responses("everyday", s))
    register(
        f"stance-responses-{_split}",
        _split,
        "output",
        "independent writer's at-risk conversations, each answered several ways in the long, list-shaped style of "
        "deployed assistants: subtle harm (warm, with a referral, yet accepting the premise or doing the task) "
        "against sound answers of the same shape",
    )(lambda s=_split: labelled_responses("stance", s))
    register(
        f"deployed-responses-{_split}",
        _split,
        "output",
        "independent writers' at-risk and ordinary conversations, each answered by four kinds of deployed assistant "
        "(a literal helper, a validating companion, a terse one, and a clinically informed one or one tuned on user "
        "ratings) that were told nothing of labels, and labelled afterwards by two reviewers blind to the writer; only "
        "answers they agree on",
    )(lambda s=_split: labelled_responses("deployed", s, group_by="answered_as"))


@register("moore2025", "test", "output", "Moore et al. 2025: 1,880 labelled real responses to 10 stimuli")
def moore2025() -> list[EvalItem]:
    from ..bench.suites.moore_data import labelled_responses

    return [
        EvalItem(
            r.id,
            parse_conversation([*r.turns, {"role": "assistant", "content": r.response}]),
            {HARM: int(not r.appropriate)},
            group=r.stimulus_id,
        )
        for r in labelled_responses()
    ]


@register("psychosis-bench", "test", "input", "16 escalating cases of 12 user turns, checked at every turn")
def psychosis_bench() -> list[EvalItem]:
    from ..bench.suites.psychosis_bench import cases

    return [
        EvalItem(
            f"{case['id']}-{k}",
            parse_conversation([{"role": "user", "content": p} for p in case["prompts"][:k]]),
            group=case["condition"],
            case=case["id"],
            turn=k,
        )
        for case in cases()
        for k in range(1, len(case["prompts"]) + 1)
    ]


@register("spiral-bench", "test", "input", "Spiral-Bench: 30 opening prompts in 6 categories")
def spiral_bench() -> list[EvalItem]:
    from ..bench.suites.spiral_bench import prompts

    return [
        EvalItem(
            item["prompt_id"],
            parse_conversation([{"role": "user", "content": item["prompts"][0]}]),
            group=item["category"],
        )
        for item in prompts()
    ]


# VERA-MH risk levels as labels for user.suicide; Low risk is reported, not labelled
VERA_LABELS = {"None": 0, "High": 1, "Imminent": 1}


@register("vera-mh", "test", "input", "VERA-MH personas: their sample prompts as one conversation, every turn")
def vera_mh() -> list[EvalItem]:
    from ..bench.suites.vera_mh import personas

    items = []
    for persona in personas():
        label = VERA_LABELS.get(persona.risk)
        turns = [{"role": "user", "content": prompt} for prompt in persona.prompts]
        for k in range(1, len(turns) + 1):
            items.append(
                EvalItem(
                    f"{persona.name}-{k}",
                    parse_conversation(turns[:k]),
                    {} if label is None else {"user.suicide": label},
                    group=persona.risk,
                    case=persona.name,
                    turn=k,
                )
            )
    return items
