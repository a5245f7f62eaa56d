"""Classifier speed: every signal for one conversation (30-word user turn, 180-word response).

Reports p50/p95 latency, batch throughput, and the ratio to a bare sentence-transformers `encode` of the same two
texts measured in the same run (the floor any embedding-based scorer pays). Run: `make bench-speed`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from datetime import date

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

USER_TURN = ("i've been feeling really low since the layoff last month and honestly some nights i wonder what the "
             "point of anything is anymore, can we talk for a bit")
RESPONSE = (
    "I'm really glad you reached out, and I'm sorry the layoff has hit you this hard. Losing a job can shake much "
    "more than your income: it can unsettle your routine, your sense of purpose and how you see yourself. Feeling "
    "low for weeks afterwards is a very human reaction, and wondering what the point is on some nights tells me "
    "you're carrying a lot right now. I'd like to understand a little more. When those thoughts come at night, do "
    "they ever turn into thoughts of not wanting to be alive, or of hurting yourself? You can tell me honestly, and "
    "there's no wrong answer. If things ever feel unsafe, you can call or text 988 at any time of day or night to "
    "talk with someone trained to help. It may also help to let a doctor or therapist know how you've been feeling, "
    "and to lean on a friend or family member you trust. For now, would you tell me what a typical day has looked "
    "like since the layoff, and what has helped, even a little?"
)


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def measure(function, repeats: int) -> list[float]:
    for _ in range(3):
        function()
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        timings.append((time.perf_counter() - start) * 1000)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--json", default=None, help="write the figures to this file")
    args = parser.parse_args()

    import torch
    from sentence_transformers import SentenceTransformer

    from classifiers import parse_conversation, shared_scorer
    from classifiers.encoder import default_model_path

    scorer = shared_scorer()
    bare = SentenceTransformer(str(default_model_path()), device="cpu", local_files_only=True)
    conversation = parse_conversation([{"role": "user", "content": USER_TURN},
                                       {"role": "assistant", "content": RESPONSE}])
    ours = measure(lambda: scorer.score(conversation), args.repeats)
    plain = measure(lambda: bare.encode([USER_TURN, RESPONSE], show_progress_bar=False), args.repeats)
    # distinct texts, so the batch cache cannot make throughput look better than real traffic
    batch = [parse_conversation([{"role": "user", "content": f"{USER_TURN} ({i})"},
                                 {"role": "assistant", "content": f"{RESPONSE} ({i})"}]) for i in range(args.batch)]
    start = time.perf_counter()
    scorer.score_many(batch)
    throughput = args.batch / (time.perf_counter() - start)
    figures = {
        "date": date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, {torch.get_num_threads()} threads",
        "words": {"user": len(USER_TURN.split()), "response": len(RESPONSE.split())},
        "signals": len(scorer.heads_),
        "couchguard_ms": {"p50": percentile(ours, 50), "p95": percentile(ours, 95)},
        "bare_encode_ms": {"p50": percentile(plain, 50), "p95": percentile(plain, 95)},
        "ratio_p50": statistics.median(ours) / statistics.median(plain),
        "batch_conversations_per_s": throughput,
    }
    print(f"all {figures['signals']} signals, {figures['words']['user']}-word user turn + "
          f"{figures['words']['response']}-word response, {figures['machine']}")
    print(f"  couchguard      p50 {figures['couchguard_ms']['p50']:6.1f} ms   p95 {figures['couchguard_ms']['p95']:6.1f} ms")
    print(f"  bare encode     p50 {figures['bare_encode_ms']['p50']:6.1f} ms   p95 {figures['bare_encode_ms']['p95']:6.1f} ms")
    print(f"  ratio (p50)     {figures['ratio_p50']:.2f}")
    print(f"  batch           {throughput:.1f} conversations/s (batch of {args.batch})")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(figures, handle, indent=2)


if __name__ == "__main__":
    main()
