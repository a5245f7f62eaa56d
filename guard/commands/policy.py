"""`couchguard policy check FILE...` and `couchguard policy explain NAME|PATH`."""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

import yaml

CRITERIA_FILE = Path(__file__).resolve().parents[2] / "policies" / "data" / "criteria.yaml"


def add_parser(sub) -> None:
    parser = sub.add_parser("policy", help="validate or explain policy files")
    actions = parser.add_subparsers(dest="policy_command", metavar="ACTION", required=True)
    check = actions.add_parser("check", help="validate policy files; exit 1 and list every problem if invalid")
    check.add_argument("files", nargs="+")
    check.set_defaults(run=run_check)
    explain = actions.add_parser("explain", help="print every rule with its criterion and guideline sources")
    explain.add_argument("policy")
    explain.set_defaults(run=run_explain)
    listing = actions.add_parser("list", help="list the shipped policies")
    listing.set_defaults(run=run_list)


@lru_cache(maxsize=1)
def criteria() -> dict:
    return yaml.safe_load(CRITERIA_FILE.read_text(encoding="utf-8"))


def run_check(args) -> int:
    from ..policy import PolicyError, load_policy

    failed = 0
    for file in args.files:
        try:
            policy = load_policy(file)
        except PolicyError as exc:
            failed += 1
            print(f"{file}: INVALID ({len(exc.problems)} problem{'s' if len(exc.problems) != 1 else ''})")
            for problem in exc.problems:
                print(f"  {problem}")
        else:
            print(
                f"{file}: ok ({policy.name}: {len(policy.input_rules)} input rules, "
                f"{len(policy.output_rules)} output rules)"
            )
    return 1 if failed else 0


def _condition_text(condition) -> str:
    """A rule's condition as the explanation prints it (each condition kind reads itself aloud)."""
    return str(condition)


def _how_signals_combine(policy) -> str:
    """How the policy weighs what a response does wrong against what it does right, read from its own rules."""
    from classifiers.signals import SIGNALS

    protective = [name for name, spec in SIGNALS.items() if spec.kind == "protective"]
    spared = []
    for rule in policy.output_rules:
        guards = sorted({signal for signal, _, negated in rule.when.signals() if negated and signal in protective})
        if guards:
            spared.append(f"  - {rule.id}: spared when the response carries {' or '.join(guards)} at the level shown")
    lines = [
        "",
        "## How harm and protective signals combine",
        f"Harm signals start rules; protective signals ({', '.join(protective)}) describe what a sound answer "
        "does and never start one. In a rule they stand under NOT: a response at the harm threshold is not "
        "withheld when it also does the protective act at the level shown, so an answer that engages warmly with "
        "the user's experience while questioning the premise, or declining the harmful task, is delivered.",
    ]
    lines += spared or ["  (no output rule of this policy weighs protective signals)"]
    return "\n".join(lines) + "\n"


def _judge_text(policy) -> str:
    """The judge tier's settings, when the policy turns it on (docs/judge.md); no secrets: the key's variable name."""
    judge = policy.judge
    if judge is None:
        return "judge tier: off (classifiers decide alone)\n"
    bands = ", ".join(f"{signal} {list(band)}" for signal, band in judge.band.items())
    default = f"default band {list(judge.default_band)}" if judge.default_band else "no default band"
    return (
        f"judge tier: {judge.model}{f' at {judge.api_base}' if judge.api_base else ''}; {default}"
        f"{f'; {bands}' if bands else ''}; timeout {judge.timeout_s} s; on error {judge.on_error}; "
        f"cache {judge.cache_size}; at most {judge.max_calls_per_minute} calls/min\n"
    )


def run_explain(args) -> int:
    from ..judge import question_for
    from ..policy import PolicyError, load_policy
    from ..policy.schema import InputRule

    try:
        policy = load_policy(args.policy)
    except PolicyError as exc:
        print(exc, file=sys.stderr)
        return 2
    table = criteria()
    out = sys.stdout
    out.write(f"# {policy.name}\n{policy.description.strip()}\n\n")
    out.write(f"locale {policy.locale} | fail mode {policy.fail_mode} | observe only {policy.observe_only}\n")
    if policy.thresholds:
        out.write("thresholds: " + ", ".join(f"{k}={v}" for k, v in policy.thresholds.items()) + "\n")
    out.write(_judge_text(policy))
    out.write(_how_signals_combine(policy))
    for rail, rules in (("input", policy.input_rules), ("output", policy.output_rules)):
        out.write(f"\n## {rail} rules\n")
        for rule in rules:
            criterion = table.get(rule.criterion, {})
            extra = rule.instruction or rule.template or ""
            out.write(
                f"\n- {rule.id}: {rule.action}{' + escalate' if rule.escalate else ''}"
                f"{f' ({extra})' if extra else ''}\n"
            )
            out.write(f"  when {_condition_text(rule.when)}\n")
            if isinstance(rule, InputRule) and rule.tighten:
                held = ", ".join(f"{signal} {level}" for signal, level in rule.tighten.items())
                out.write(f"  then this conversation's output rules use {held} where the default is higher\n")
            if rule.description:
                out.write(f"  {rule.description}\n")
            out.write(f"  criterion: {criterion.get('title', rule.criterion)} - {criterion.get('summary', '')}\n")
            if rail == "output":
                out.write(f"  judge question: {question_for(rule.criterion)}\n")
            sources = criterion.get("guidelines") or [criterion.get("source", "")]
            out.write(
                f"  sources: {criterion.get('source', '')}; " + ", ".join(sources) + "\n"
                if criterion.get("guidelines")
                else f"  sources: {criterion.get('source', '')}\n"
            )
    return 0


def run_list(args) -> int:
    from ..policy import load_policy, shipped_policies

    for name in shipped_policies():
        print(f"{name:20s} {load_policy(name).description.strip().splitlines()[0][:90]}")
    return 0
