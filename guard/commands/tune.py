"""`couchguard tune --policy P --data LABELLED.jsonl --target-recall R [--max-false-alarm F] --out OVERRIDE.yaml`."""

from __future__ import annotations

import sys
from pathlib import Path


def add_parser(sub) -> None:
    parser = sub.add_parser(
        "tune",
        help="choose per-signal thresholds from a product's labelled conversations",
        description='Score the product\'s labelled conversations (JSON lines: {"id", "messages", "labels": '
        '{"user.suicide": 1, ...}}; or "expected_flags": [...] instead of labels; or pre-computed '
        '"scores": {...} instead of messages), choose for each labelled signal the highest threshold '
        "reaching the target recall, and write an override policy that extends the base.",
    )
    parser.add_argument("--policy", default="mental-health", help="base policy: shipped name or path")
    parser.add_argument("--data", type=Path, required=True, help="labelled conversations (JSON lines)")
    parser.add_argument("--target-recall", type=float, required=True, help="recall each signal must reach, e.g. 0.95")
    parser.add_argument(
        "--max-false-alarm",
        type=float,
        default=None,
        help="refuse when the target costs a higher false-alarm rate than this",
    )
    parser.add_argument("--out", type=Path, required=True, help="override policy to write (YAML)")
    parser.add_argument("--signals", default="", help="comma-separated subset of the labelled signals to tune")
    parser.add_argument(
        "--report", type=Path, default=None, help="report folder (default: next to --out, named <out>-report)"
    )
    parser.add_argument("--name", default=None, help="name of the override policy (default: <base>-tuned)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(run=run)


def run(args) -> int:
    from ..bench.tune.data import LabelledDataError
    from ..bench.tune.points import TuneRefusal
    from ..bench.tune.run import TuneRequest, tune
    from ..policy import PolicyError

    if args.max_false_alarm is not None and not 0 <= args.max_false_alarm <= 1:
        print(f"couchguard tune: --max-false-alarm must be in [0, 1], got {args.max_false_alarm}", file=sys.stderr)
        return 2
    request = TuneRequest(
        policy=args.policy,
        data=args.data,
        target_recall=args.target_recall,
        out=args.out,
        max_false_alarm=args.max_false_alarm,
        report_dir=args.report,
        name=args.name,
        signals=tuple(s.strip() for s in args.signals.split(",") if s.strip()),
        progress=not args.no_progress,
    )
    try:
        tune(request)
    except TuneRefusal as exc:
        print(f"couchguard tune: {exc}", file=sys.stderr)
        return 3
    except LabelledDataError as exc:
        print(f"couchguard tune: invalid labelled data\n{exc}", file=sys.stderr)
        return 2
    except PolicyError as exc:
        print(f"couchguard tune: invalid policy\n{exc}", file=sys.stderr)
        return 2
    return 0
