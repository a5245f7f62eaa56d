"""`couchguard train`: rebuild every signal head and model card from classifiers/corpora."""

from __future__ import annotations

from pathlib import Path


def add_parser(sub) -> None:
    parser = sub.add_parser("train", help="retrain every signal head from the corpora (deterministic)")
    parser.add_argument("--artifacts", type=Path, default=None, help="output directory for heads")
    parser.add_argument("--cards", type=Path, default=None, help="output directory for model cards")
    parser.add_argument("--signal", action="append", help="train only this signal (repeatable)")
    parser.add_argument("--no-cache", action="store_true", help="do not reuse cached embeddings")
    parser.add_argument(
        "--finetune",
        action="store_true",
        help="first rebuild the fine-tuned encoder from all-MiniLM-L6-v2 (slow: tens of minutes on a CPU)",
    )
    parser.set_defaults(run=run)


def run(args) -> int:
    from classifiers import training
    from classifiers.encoder import SHIPPED_DIR, Encoder, base_model_path
    from classifiers.finetune import finetune

    encoder = None
    if args.finetune:
        finetune(SHIPPED_DIR, base_model_path(), log=lambda message: print(message, flush=True))
        encoder = Encoder(SHIPPED_DIR).load()
    training.train(
        args.artifacts or training.ARTIFACTS_DIR,
        args.cards or training.CARDS_DIR,
        signals=args.signal,
        encoder=encoder,
        use_cache=not args.no_cache,
    )
    return 0
