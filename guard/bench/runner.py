"""What `couchguard bench` does around a suite: validate options, run, print, write the JSON and the report."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TextIO

from .registry import get_suite
from .render import text_table
from .report import write_json, write_report
from .types import BenchOptions, SuiteRun


class BenchError(ValueError):
    """A problem the user can fix (bad option, bad policy); printed without a traceback."""


def run_bench(
    name: str,
    options: BenchOptions,
    *,
    json_path: Path | None = None,
    report_dir: Path | None = None,
    out: TextIO | None = None,
) -> int:
    out = out or sys.stdout  # looked up per call: sys.stdout may be replaced (capture, redirection)
    from ..pipeline import Guard
    from ..policy import PolicyError, load_policy

    try:
        suite = get_suite(name)
    except KeyError as exc:
        raise BenchError(exc.args[0]) from None
    _validate(suite, options)
    try:
        policy = load_policy(options.policy)
    except PolicyError as exc:
        raise BenchError(f"invalid policy\n{exc}") from None
    started = time.perf_counter()
    guard = Guard(policy)
    result = suite.run(guard, options)
    seconds = time.perf_counter() - started
    result.summary.setdefault("seconds", round(seconds, 1))
    print_run(name, policy.name, result, out)
    if json_path is not None:
        write_json(json_path, result.summary)
        print(f"JSON results: {json_path}", file=out)
    if report_dir is not None:
        page = write_report(
            report_dir,
            title=f"couchguard bench {name}",
            headline=result.headline,
            meta={
                "suite": name,
                "policy": policy.name,
                "mode": result.summary.get("mode"),
                "n": result.summary.get("n"),
                "seconds": round(seconds, 1),
            },
            tables=result.tables,
            figures=result.figures,
            notes=result.notes,
        )
        print(f"HTML report: {page.resolve()} (open it in a browser)", file=out)
    return 0


def print_run(name: str, policy: str, result: SuiteRun, out: TextIO) -> None:
    mode = result.summary.get("mode", "offline")
    print(f"couchguard bench {name} · policy {policy} · {result.summary.get('n')} items · {mode}", file=out)
    print(result.headline, file=out)
    for table in result.tables:
        print("", file=out)
        print(text_table(table), file=out)
        if table.note:
            print(f"  note: {table.note}", file=out)
    print("", file=out)


def _validate(suite, options: BenchOptions) -> None:
    if options.limit is not None and options.limit < 1:
        raise BenchError(f"--limit must be at least 1, got {options.limit}")
    if options.live and not suite.live:
        raise BenchError(
            f"suite {suite.name!r} measures the input rail on fixed prompts and has no live mode; "
            "--model applies to moore2025"
        )
    if not options.live and (options.judge or options.api_base or options.steel_man):
        raise BenchError("--judge, --api-base and --steel-man need --model (live mode)")
    if options.judge_tier_api_base and not options.judge_tier:
        raise BenchError("--judge-tier-api-base needs --judge-tier")
    if options.judge_tier and (options.live or not suite.judge_tier):
        raise BenchError("--judge-tier measures the judge tier on recorded responses: moore2025 without --model")
    if options.live and (options.samples < 1 or options.concurrency < 1):
        raise BenchError("--samples and --concurrency must be at least 1")
