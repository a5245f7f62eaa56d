"""Loading policy files: YAML with line numbers, `extends` chains, and errors people can act on.

Every problem found is reported, each with the file, line, rule and field it concerns, e.g.
`policies/clinic.yaml:14: input_rules[1] (rule 'steer-suicide') when.signal: unknown signal 'user.suicid'`.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import yaml
from pydantic import ValidationError

from classifiers.signals import SIGNALS

from ..actions import action_spec
from ..resources import known_instructions, known_templates
from ..rewriting import REWRITE_STRATEGIES
from .conditions import CONDITION_ERROR, CONDITION_KINDS
from .schema import InputRule, OutputRule, Policy

POLICIES_DIR = Path(__file__).resolve().parents[2] / "policies"

Location = tuple[Any, ...]


@dataclass(frozen=True)
class Problem:
    file: str
    line: int | None
    location: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.location}: {self.message}" if self.location else f"{where}: {self.message}"


class PolicyError(ValueError):
    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


def shipped_policies() -> list[str]:
    return sorted(path.stem for path in POLICIES_DIR.glob("*.yaml"))


def resolve_path(name_or_path: str | Path, relative_to: Path | None = None) -> Path:
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml"):
        if not candidate.is_absolute() and relative_to is not None and not candidate.exists():
            candidate = relative_to / candidate
        return candidate
    shipped = POLICIES_DIR / f"{name_or_path}.yaml"
    if shipped.exists():
        return shipped
    raise PolicyError(
        [
            Problem(
                str(name_or_path),
                None,
                "",
                (
                    f"no policy named {str(name_or_path)!r}; shipped policies: {', '.join(shipped_policies())} "
                    "(or give a path to a .yaml file)"
                ),
            )
        ]
    )


# -- YAML with line numbers ----------------------------------------------------------------------------------------
def _read_yaml(path: Path) -> tuple[Any, dict[Location, int]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PolicyError([Problem(str(path), None, "", "file not found")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError([Problem(str(path), None, "", f"cannot read file: {exc}")]) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else None
        raise PolicyError([Problem(str(path), line, "", f"invalid YAML: {getattr(exc, 'problem', exc)}")]) from None
    lines: dict[Location, int] = {}
    if node is not None:
        _index_lines(node, (), lines)
    return data, lines


def _index_lines(node: yaml.Node, location: Location, lines: dict[Location, int]) -> None:
    lines[location] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            child = location + (key.value,)
            lines[child] = key.start_mark.line + 1
            _index_lines(value, child, lines)
            lines[child] = key.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _index_lines(item, location + (index,), lines)


def _line_for(location: Location, lines: dict[Location, int]) -> int | None:
    for end in range(len(location), -1, -1):
        if location[:end] in lines:
            return lines[location[:end]]
    return None


def _render(location: Location, data: Any) -> str:
    parts: list[str] = []
    node = data
    for step in location:
        if isinstance(step, int):
            label = f"[{step}]"
            if isinstance(node, list) and step < len(node) and isinstance(node[step], dict) and "id" in node[step]:
                label += f" (rule {node[step]['id']!r})"
            parts.append(label)
        else:
            parts.append(("." if parts else "") + str(step))
        node = node[step] if isinstance(node, (dict, list)) and _has(node, step) else None
    return "".join(parts)


def _has(node: Any, step: Any) -> bool:
    if isinstance(node, dict):
        return step in node
    return isinstance(step, int) and 0 <= step < len(node)


# -- validation ----------------------------------------------------------------------------------------------------
def _problem(path: Path, location: Location, data: Any, lines: dict, message: str) -> Problem:
    return Problem(str(path), _line_for(location, lines), _render(location, data), message)


def _suggest(name: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _check_references(
    data: dict, valid_rules: dict[tuple[str, int], Any], observe_only: bool, path: Path, lines: dict
) -> list[Problem]:
    """Problems pydantic cannot see: names that must exist, signals on the wrong rail, duplicate ids.

    Runs on every rule that is structurally valid, even when other parts of the file are not, so that one run
    reports everything there is to fix.
    """
    problems = []
    templates, instructions = known_templates(), known_instructions()

    def report(location: Location, message: str) -> None:
        problems.append(_problem(path, location, data, lines, message))

    thresholds = data.get("thresholds")
    for signal in thresholds if isinstance(thresholds, dict) else ():
        if signal not in SIGNALS:
            report(("thresholds", signal), f"unknown signal {signal!r}{_suggest(str(signal), SIGNALS)}")
    judge = data.get("judge")
    band = judge.get("band") if isinstance(judge, dict) else None
    for signal in band if isinstance(band, dict) else ():
        if signal not in SIGNALS:
            report(("judge", "band", signal), f"unknown signal {signal!r}{_suggest(str(signal), SIGNALS)}")
        elif SIGNALS[signal].side != "assistant":
            report(
                ("judge", "band", signal),
                f"{signal!r} is a user signal: the judge decides output rules only, so its band takes assistant "
                "signals",
            )
    for rail in ("input_rules", "output_rules"):
        raw_rules = _rules_of(data, rail)
        seen: dict[str, int] = {}
        for index, raw in enumerate(raw_rules):
            rule_id = raw.get("id") if isinstance(raw, dict) else None
            if isinstance(rule_id, str):
                if rule_id in seen:
                    report(
                        (rail, index, "id"), f"duplicate rule id {rule_id!r} (first used at {rail}[{seen[rule_id]}])"
                    )
                seen.setdefault(rule_id, index)
            rule = valid_rules.get((rail, index))
            if rule is None:
                continue
            base = (rail, index)
            for signal, location, _ in rule.when.signals(base + ("when",)):
                if signal not in SIGNALS:
                    report(location, f"unknown signal {signal!r}{_suggest(signal, SIGNALS)}")
                elif rail == "input_rules" and SIGNALS[signal].side == "assistant":
                    report(
                        location,
                        f"{signal!r} is an assistant signal: the input rail runs before any response "
                        "exists, so input rules may use user signals only",
                    )
            if rule.template is not None and rule.template not in templates:
                report(base + ("template",), f"unknown template {rule.template!r}{_suggest(rule.template, templates)}")
            if rule.instruction is not None and rule.instruction not in instructions:
                report(
                    base + ("instruction",),
                    f"unknown instruction {rule.instruction!r}{_suggest(rule.instruction, instructions)}",
                )
            problems.extend(_check_action_needs(rule, rail, path, base, data, lines))
            for signal in getattr(rule, "tighten", {}):
                if signal not in SIGNALS:
                    report(base + ("tighten", signal), f"unknown signal {signal!r}{_suggest(signal, SIGNALS)}")
            if observe_only and rule.action != "allow":
                report(
                    base + ("action",),
                    f"observe_only policies never change content: action must be 'allow', not {rule.action!r}",
                )
    return problems


def _rules_of(data: dict, rail: str) -> list[Any]:
    rules = data.get(rail)
    return rules if isinstance(rules, list) else []


def _check_action_needs(rule, rail: str, path: Path, base: Location, data: Any, lines: dict) -> list[Problem]:
    """The fields the rule's action (and, for a rewrite, each of its strategies) cannot work without."""
    problems = []
    spec = action_spec("input" if rail == "input_rules" else "output", rule.action)
    for field in spec.needs:
        if getattr(rule, field, None) is None:
            problems.append(
                _problem(
                    path,
                    base + ("action",),
                    data,
                    lines,
                    f"action {rule.action!r} needs a {field!r} (what the user or the model receives)",
                )
            )
    for strategy in rule.strategies if spec.rewrites and not problems else ():
        for field in REWRITE_STRATEGIES[strategy].needs:
            if getattr(rule, field, None) is None:
                problems.append(
                    _problem(
                        path,
                        base + ("strategies",),
                        data,
                        lines,
                        f"the {strategy!r} strategy needs an {field!r} telling the model what to correct",
                    )
                )
    return problems


def _validate_file(path: Path) -> tuple[Policy, set[str]]:
    data, lines = _read_yaml(path)
    if not isinstance(data, dict):
        raise PolicyError([Problem(str(path), 1, "", "a policy file must be a mapping with at least 'name'")])
    problems: list[Problem] = []
    policy = None
    try:
        policy = Policy.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors():
            location = tuple(error["loc"])
            problems.append(_problem(path, location, data, lines, _message(error)))
    valid_rules = {}
    for rail, model in (("input_rules", InputRule), ("output_rules", OutputRule)):
        for index, raw in enumerate(_rules_of(data, rail)):
            try:
                valid_rules[(rail, index)] = model.model_validate(raw)
            except ValidationError:
                continue  # already reported above
    problems.extend(_check_references(data, valid_rules, data.get("observe_only") is True, path, lines))
    if problems or policy is None:
        raise PolicyError(_dedupe(sorted(problems, key=lambda p: p.line or 0)))
    return policy, set(data)


def _message(error: Any) -> str:
    if error["type"] == CONDITION_ERROR and isinstance(error.get("input"), dict):
        keys = [str(k) for k in error["input"]]
        close = [m for k in keys for m in difflib.get_close_matches(k, list(CONDITION_KINDS), n=1)]
        found = f"; found {', '.join(repr(k) for k in keys)}" if keys else ""
        return error["msg"] + found + (f" (did you mean {close[0]!r}?)" if close else "")
    return error["msg"]


def _dedupe(problems: list[Problem]) -> list[Problem]:
    return list(dict.fromkeys(problems))


# -- extends -------------------------------------------------------------------------------------------------------
def load_policy(name_or_path: str | Path, _chain: tuple[Path, ...] = ()) -> Policy:
    """Load a shipped policy by name or a policy file by path, with its `extends` chain merged in."""
    path = resolve_path(name_or_path, _chain[-1].parent if _chain else None).resolve()
    if path in _chain:
        cycle = " -> ".join(p.name for p in _chain + (path,))
        raise PolicyError([Problem(str(_chain[-1]), None, "extends", f"cyclic extends: {cycle}")])
    policy, present = _validate_file(path)
    if policy.extends is None:
        return policy
    base = load_policy(policy.extends, _chain + (path,))
    return _merge(base, policy, present, path)


def _merge(base: Policy, child: Policy, present: set[str], path: Path) -> Policy:
    def merged_rules(rail: str):
        rules = {rule.id: rule for rule in getattr(base, rail) if rule.id not in child.disable_rules}
        for rule in getattr(child, rail):
            rules[rule.id] = rule
        return list(rules.values())

    known_ids = {rule.id for rule in base.input_rules + base.output_rules}
    unknown = [rule_id for rule_id in child.disable_rules if rule_id not in known_ids]
    if unknown:
        raise PolicyError(
            [
                Problem(str(path), None, "disable_rules", f"no rule {rule_id!r} in {base.name!r} to disable")
                for rule_id in unknown
            ]
        )
    values = base.model_dump(by_alias=True)
    values.update(
        {
            field: getattr(child, field)
            for field in present
            if field not in ("thresholds", "input_rules", "output_rules", "disable_rules")
        }
    )
    values["thresholds"] = {**base.thresholds, **child.thresholds}
    values["input_rules"] = [r.model_dump(by_alias=True) for r in merged_rules("input_rules")]
    values["output_rules"] = [r.model_dump(by_alias=True) for r in merged_rules("output_rules")]
    values["disable_rules"] = []
    values["extends"] = child.extends
    merged = Policy.model_validate(values)
    if merged.observe_only:
        bad = [r.id for r in merged.input_rules + merged.output_rules if r.action != "allow"]
        if bad:
            raise PolicyError(
                [Problem(str(path), None, "observe_only", f"inherited rules change content: {', '.join(bad)}")]
            )
    return merged
