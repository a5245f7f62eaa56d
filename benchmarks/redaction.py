"""Audit redaction speed: pathological and very long messages must be redacted (or withheld) in under 2 s each.

Each input goes through `Redactor.redact` with the default budget (guard/audit/budget.py), best of `--repeat`
runs; the output length and the characters withheld show what the budget cost. `--stock-url` also times
presidio's own UrlRecognizer on the runs of dots that made it the bottleneck (seconds for 1,000 dots, a minute for
8,000), for the before/after comparison. Then the throughput on ordinary sentences: the PII corpus of the tests.
Run: `.venv/bin/python benchmarks/redaction.py`.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

GOAL_S = 2.0
PII = "Call me on 07700 900123 or write to 12 rue de la Paix, 75002 Paris. "
CORPUS = Path(__file__).parents[1] / "tests" / "data" / "pii" / "values.jsonl"


def inputs() -> dict[str, str]:
    return {
        "dots x1,000": "." * 1_000,
        "dots x8,000": "." * 8_000,
        "dots x200,000": "." * 200_000,
        "'a.' x100,000": "a." * 100_000,
        "'x ' x100,000 (100k tokens)": "x " * 100_000,
        "prose with PII, 200,000 chars": (PII * 3_000)[:200_000],
        "one 200,000-char word": "a" * 200_000,
    }


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--stock-url", action="store_true", help="also time presidio's UrlRecognizer on dots")
    args = parser.parse_args()

    from guard.audit import shared_redactor

    redactor = shared_redactor()
    redactor.redact("warm up the pipeline")
    print(f"{'input':34} {'seconds':>8} {'out chars':>10} {'withheld':>9}")
    missed = []
    for name, text in inputs().items():
        out: list[str] = []
        seconds = best_of(lambda: out.append(redactor.redact(text)), args.repeat)
        match = re.search(r"\[redaction budget exceeded: (\d+) chars withheld\]$", out[-1])
        print(f"{name:34} {seconds:8.3f} {len(out[-1]):10,} {int(match.group(1)) if match else 0:9,}")
        if seconds >= GOAL_S:
            missed.append(name)

    sentences = [json.loads(line)["sentence"] for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    per = []
    for sentence in sentences:
        began = time.perf_counter()
        redactor.redact(sentence)
        per.append(time.perf_counter() - began)
    print(
        f"PII corpus: {len(sentences)} sentences, p50 {statistics.median(per) * 1000:.1f} ms, "
        f"p95 {statistics.quantiles(per, n=20)[-1] * 1000:.1f} ms"
    )

    if args.stock_url:
        from presidio_analyzer.predefined_recognizers import UrlRecognizer

        from guard.audit.recognizers import BoundedUrlRecognizer

        for recognizer in (UrlRecognizer(), BoundedUrlRecognizer()):
            for n in (1_000, 8_000):
                seconds = best_of(lambda: recognizer.analyze("." * n, ["URL"]), 1)
                print(f"{recognizer.name:22} dots x{n:<6,} {seconds:8.3f} s")

    if missed:
        print(f"over the {GOAL_S} s goal: {', '.join(missed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
