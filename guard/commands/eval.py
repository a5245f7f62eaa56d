"""`couchguard eval`: signals and policy measured on text that the training corpora's writers did not write."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def add_parser(sub) -> None:
    parser = sub.add_parser("eval", help="measure on the dev and test sets and the third-party suites (offline)")
    parser.add_argument("--policy", default="mental-health", help="policy name or YAML path")
    parser.add_argument(
        "--split",
        choices=("dev", "test", "all"),
        default="all",
        help="dev: the sets choices are made on; test: the sets only ever reported",
    )
    parser.add_argument("--set", action="append", dest="sets", metavar="NAME", help="only these sets (repeatable)")
    parser.add_argument("--json", type=Path, help="also write the full report as JSON here")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument(
        "--choose-thresholds",
        action="store_true",
        help="choose the harm signals' shipped thresholds on the dev sets and print them",
    )
    parser.add_argument(
        "--write",
        action="store_true",
        help="with --choose-thresholds: store them in the shipped heads' metadata and model cards",
    )
    parser.set_defaults(run=run)


def run(args) -> int:
    from ..bench.types import BenchOptions
    from ..evaluation import EVAL_SETS, eval_sets, evaluate
    from ..evaluation.render import render
    from ..pipeline import Guard

    if args.choose_thresholds:
        return _choose_thresholds(args.write)
    sets = eval_sets(args.split)
    if args.sets:
        unknown = sorted(set(args.sets) - set(EVAL_SETS))
        if unknown:
            print(f"unknown evaluation set(s) {', '.join(unknown)}; known: {', '.join(EVAL_SETS)}", file=sys.stderr)
            return 2
        sets = [s for s in sets if s.name in args.sets]
    guard = Guard.from_policy(args.policy)
    report = evaluate(guard, sets, BenchOptions(policy=args.policy, batch=max(1, args.batch), progress=not args.quiet))
    sys.stdout.write(render(report))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))
    return 0


def _choose_thresholds(write: bool) -> int:
    from classifiers import shared_scorer
    from classifiers.training import CARDS_DIR

    from ..evaluation import thresholds

    scorer = shared_scorer()
    # scored once: the cap in `choose` and the report below read the same held-out positives
    held_out = thresholds.held_out_positive_scores(scorer, thresholds.harm_signals())
    chosen = thresholds.choose(scorer, held_out)
    recalls = thresholds.held_out_recall(scorer, {name: threshold for name, (threshold, _) in chosen.items()}, held_out)
    for name, (threshold, rule) in chosen.items():
        held = recalls.get(name)
        flagged = (
            f"; flags {held.at_chosen:.1%} of {held.positives} authored held-out positives ({held.at_authored:.1%} "
            "at training's threshold)"
            if held
            else ""
        )
        print(f"{name:24s} {scorer.default_threshold(name):.3f} -> {threshold:.3f}  ({rule}{flagged})")
    if write:
        thresholds.write(chosen, scorer.artifacts_dir, CARDS_DIR)
        print(f"written to {scorer.artifacts_dir} and {CARDS_DIR}")
    return 0
