"""Where `couchguard check` spends its time: Moore et al.'s responses through the real command, under cProfile.

Writes `<out>/profile.txt` (time under each stage: windowing, encoding, the forward pass (torch or ONNX Runtime),
the heads, policy and actions; then the functions with the most time of their own and under them) and
`<out>/profile.pstats` (for snakeviz or `python -m pstats`). cProfile (standard library) adds per-call overhead to
Python code, not to the forward pass, so Python-heavy stages look slightly slower than they are. It sees the main
thread only: what the output rail runs in worker threads (the rewrite loop re-scoring sentences and candidates) shows
as the event loop waiting (`select.epoll.poll`) inside "policy and actions".
Named profile_check, not profile: a script in benchmarks/ puts that folder first on sys.path, and a
profile.py there would shadow the standard library module that cProfile (and torch) import.
Run: `make profile` (200 conversations, the default backend; `--backend onnx-int8` to compare).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

# The functions whose inclusive time tells the story, outermost first; nested ones overlap (the forward pass is
# inside encoding, encoding inside featurising, featurising inside scoring and re-scoring).
KEY_FUNCTIONS = (
    ("pipeline.py", "check_many", "scoring and deciding a batch"),
    ("scorer.py", "score_many", "scoring (all signals)"),
    ("features.py", "featurize", "featurising (windows, encoding, context)"),
    ("encoder.py", "chunks", "windowing (tokenising whole turns)"),
    ("encoder.py", "_encode", "encoding (tokenise, bucket, forward)"),
    ("encoder.py", "_torch_forward", "forward pass (torch)"),
    ("encoder.py", "_onnx_forward", "forward pass (ONNX Runtime)"),
    ("scorer.py", "_score_side", "heads (logistic regression)"),
    ("pipeline.py", "check", "policy and actions (per conversation)"),
    ("jsonl.py", "parse_line", "parsing input lines"),
)


def write_input(path: Path, limit: int) -> int:
    from classifiers.conversation import parse_conversation  # noqa: F401  (import cost outside the profile)
    from guard.bench.checking import evenly_spaced
    from guard.bench.suites.moore_data import labelled_responses

    every = labelled_responses()
    with open(path, "w", encoding="utf-8") as handle:
        for i in evenly_spaced(len(every), limit):
            handle.write(json.dumps({"id": every[i].id, "messages": every[i].messages}) + "\n")
    return min(limit, len(every))


def inclusive_times(stats: pstats.Stats) -> dict[str, float]:
    """Inclusive seconds under each key function (summed over the modules that define one of that name)."""
    seconds = {}
    for (filename, _, function), (_, _, _, cumulative, _) in stats.stats.items():
        for module, name, label in KEY_FUNCTIONS:
            if function == name and os.path.basename(filename) == module:
                seconds[label] = seconds.get(label, 0.0) + cumulative
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=200, help="Moore conversations (evenly spaced)")
    parser.add_argument("--batch", type=int, default=32, help="`couchguard check --batch`")
    parser.add_argument("--backend", default=None, help="torch, onnx or onnx-int8 (default: COUCHGUARD_BACKEND)")
    parser.add_argument("--out", type=Path, default=Path("reports/profile"))
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    if args.backend:
        os.environ["COUCHGUARD_BACKEND"] = args.backend

    from classifiers import shared_scorer
    from guard.cli import main as couchguard

    scorer = shared_scorer()  # loading is start-up, not checking: kept out of the profile
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "moore.jsonl"
        count = write_input(source, args.limit)
        profiler = cProfile.Profile()
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            profiler.enable()
            couchguard(["check", str(source), "--batch", str(args.batch)])
            profiler.disable()
        wall = time.perf_counter() - started
    profiler.dump_stats(args.out / "profile.pstats")
    stats = pstats.Stats(profiler)
    stages = inclusive_times(stats)
    total = stats.total_tt
    lines = [f"couchguard check: {count} Moore conversations, batch {args.batch}, backend "
             f"{scorer.encoder_.backend_}, {os.cpu_count()} cores",
             f"wall {wall:.2f} s under the profiler ({1000 * wall / count:.1f} ms per conversation), "
             f"profiled {total:.2f} s", "", "time under each stage (inclusive; nested stages overlap):"]
    for _, _, label in KEY_FUNCTIONS:
        seconds = stages.get(label, 0.0)
        lines.append(f"  {label:42s} {seconds:7.2f} s  {100 * seconds / total:5.1f}%")
    for order, title in (("tottime", "own time"), ("cumulative", "cumulative time")):
        buffer = io.StringIO()
        pstats.Stats(profiler, stream=buffer).sort_stats(order).print_stats(args.top)
        body = buffer.getvalue()
        lines += ["", f"top {args.top} functions by {title}:", body[body.find("   ncalls"):].rstrip()]
    report = "\n".join(lines) + "\n"
    (args.out / "profile.txt").write_text(report)
    print("\n".join(lines[:len(KEY_FUNCTIONS) + 4]))
    print(f"full report: {args.out / 'profile.txt'}")


if __name__ == "__main__":
    main()
