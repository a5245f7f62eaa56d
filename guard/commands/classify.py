"""`couchguard classify [FILE|-]`: signal scores for each JSON line {"id", "messages"}."""

from __future__ import annotations

import sys


def add_parser(sub) -> None:
    parser = sub.add_parser("classify", help="score conversations (JSON lines) for every signal")
    parser.add_argument("file", nargs="?", default="-", help="JSON lines with id and messages ('-' = stdin)")
    parser.add_argument("--batch", type=int, default=32, help="lines scored together (1 for interactive use)")
    parser.set_defaults(run=run)


def run(args) -> int:
    from classifiers import shared_scorer

    from ..jsonl import open_input, process

    scorer = shared_scorer()

    def handle(conversations):
        return [
            {"signals": {name: round(result.score, 4) for name, result in scores.items()}}
            for scores in scorer.score_many(conversations)
        ]

    with open_input(args.file) as source:
        ok, errors = process(source, sys.stdout, handle, batch_size=max(1, args.batch))
    print(f"classified {ok} conversations, {errors} errors", file=sys.stderr)
    return 0
