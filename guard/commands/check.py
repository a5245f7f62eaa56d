"""`couchguard check [FILE|-] [--policy NAME|PATH]`: one decision per JSON line (docs/architecture.md, "CLI contracts")."""

from __future__ import annotations

import sys


def add_parser(sub) -> None:
    parser = sub.add_parser("check", help="run the guard rails over conversations (JSON lines), no upstream model")
    parser.add_argument("file", nargs="?", default="-", help="JSON lines with id and messages ('-' = stdin)")
    parser.add_argument("--policy", default="mental-health", help="shipped policy name or path to a policy file")
    parser.add_argument("--locale", default=None, help="crisis resources for this locale (default: the policy's)")
    parser.add_argument("--batch", type=int, default=32, help="lines scored together (1 for interactive use)")
    parser.set_defaults(run=run)


def run(args) -> int:
    from ..jsonl import open_input, process
    from ..pipeline import Guard
    from ..policy import PolicyError, load_policy

    try:
        policy = load_policy(args.policy)
    except PolicyError as exc:
        print(f"couchguard check: invalid policy\n{exc}", file=sys.stderr)
        return 2
    guard = Guard(policy, locale=args.locale)

    def handle(conversations):
        return [decision.contract() for decision in guard.check_many(conversations)]

    with open_input(args.file) as source:
        ok, errors = process(source, sys.stdout, handle, batch_size=max(1, args.batch))
    print(f"checked {ok} conversations, {errors} errors", file=sys.stderr)
    return 0
