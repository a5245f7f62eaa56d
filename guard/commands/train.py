"""`couchguard train`: rebuild every signal head and model card from classifiers/corpora."""

from __future__ import annotations

from pathlib import Path


def add_parser(sub) -> None:
    parser = sub.add_parser("train", help="retrain every signal head from the corpora (deterministic)")
    parser.add_argument("--artifacts", type=Path, default=None, help="output directory for heads")
    parser.add_argument("--cards", type=Path, default=None, help="output directory for model cards")
    parser.add_argument("--signal", action="append", help="train only this signal (repeatable)")
    parser.add_argument("--no-cache", action="store_true", help="do not reuse cached embeddings")
    parser.set_defaults(run=run)


def run(args) -> int:
    from classifiers import training

    training.train(
        args.artifacts or training.ARTIFACTS_DIR,
        args.cards or training.CARDS_DIR,
        signals=args.signal,
        use_cache=not args.no_cache,
    )
    return 0
