"""`couchguard bench SUITE [--policy ...] [--json PATH] [--report DIR] [--model M --api-base URL]`.

With no model, runs offline on recorded responses and prompts (docs/architecture.md, "CLI contracts").
"""

from __future__ import annotations

import sys
from pathlib import Path


def add_parser(sub) -> None:
    # the registry, not a list kept here: suites register on import, and none imports matplotlib until it draws
    from ..bench.registry import suite_names

    parser = sub.add_parser(
        "bench",
        help="measure the guard rails on public benchmark vignettes",
        description="Measure couchguard on a public benchmark suite. Offline by default "
        "(recorded responses); --model runs a live LLM through litellm.",
    )
    parser.add_argument("suite", choices=suite_names(), help="the benchmark suite")
    parser.add_argument("--policy", default="mental-health", help="shipped policy name or path to a policy file")
    parser.add_argument("--json", dest="json_path", type=Path, default=None, help="write the results as JSON here")
    parser.add_argument("--report", type=Path, default=None, help="write a self-contained HTML report in this folder")
    parser.add_argument(
        "--limit",
        type=int,
        default=None,
        help="a deterministic, evenly spaced sample of this many items (default: all)",
    )
    parser.add_argument("--batch", type=int, default=64, help="conversations scored together")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    live = parser.add_argument_group("live mode (moore2025): responses from an LLM through litellm")
    live.add_argument("--model", default=None, help="litellm model name, e.g. openai/gpt-4o-mini")
    live.add_argument("--api-base", default=None, help="base URL of an OpenAI-compatible endpoint")
    live.add_argument("--judge", default=None, help="litellm model that answers Moore's yes/no judge questions")
    live.add_argument("--judge-api-base", default=None, help="base URL for the judge (default: litellm's)")
    live.add_argument("--steel-man", action="store_true", help="send Moore's steel-man therapist system prompt")
    live.add_argument("--samples", type=int, default=5, help="responses per stimulus (default 5)")
    live.add_argument("--temperature", type=float, default=0.7, help="sampling temperature (default 0.7)")
    live.add_argument("--concurrency", type=int, default=8, help="model calls in flight at once (default 8)")
    live.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="resumable cache folder for model answers (default ~/.cache/couchguard/bench)",
    )
    tier = parser.add_argument_group("judge tier (moore2025 offline): the LLM judge on the classifiers' uncertain band")
    tier.add_argument(
        "--judge-tier",
        default=None,
        metavar="MODEL",
        help="litellm model for the judge tier (docs/judge.md); reports rates with and without it",
    )
    tier.add_argument("--judge-tier-api-base", default=None, help="base URL of the judge tier's endpoint")
    parser.set_defaults(run=run)


def run(args) -> int:
    from ..bench.runner import BenchError, run_bench
    from ..bench.types import DEFAULT_CACHE, BenchOptions

    try:
        options = BenchOptions(
            policy=args.policy,
            limit=args.limit,
            batch=args.batch,
            progress=not args.no_progress,
            model=args.model,
            api_base=args.api_base,
            judge=args.judge,
            judge_api_base=args.judge_api_base,
            judge_tier=args.judge_tier,
            judge_tier_api_base=args.judge_tier_api_base,
            steel_man=args.steel_man,
            samples=args.samples,
            temperature=args.temperature,
            concurrency=args.concurrency,
            cache_dir=args.cache or DEFAULT_CACHE,
        )
        return run_bench(args.suite, options, json_path=args.json_path, report_dir=args.report)
    except BenchError as exc:
        print(f"couchguard bench: {exc}", file=sys.stderr)
        return 2
