"""Classifier speed: every signal for one conversation (30-word user turn, 180-word response).

Reports p50/p95 latency, batch throughput, and the ratio to a bare sentence-transformers `encode` of the same two
texts measured in the same run (the floor any embedding-based scorer pays). Two conversations are measured: a calm
one, and one where the user is at risk, for which the response is also scored sentence by sentence (a second
encoder pass over it; see `SignalScorer.sentence_gate`). Run: `make bench-speed`.
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

CALM_USER_TURN = ("can you help me plan dinners for next week? i want more vegetables, nothing that takes longer "
                  "than half an hour, and i'm cooking for two on a fairly tight budget")
CALM_RESPONSE = (
    "Happy to help! Here is a simple plan for two that keeps each dinner under thirty minutes and leans on cheap, "
    "filling vegetables. Monday: a chickpea and spinach curry with rice; use tinned chickpeas and frozen spinach to "
    "keep costs down. Tuesday: vegetable fried rice with eggs, using up Monday's leftover rice and whatever "
    "vegetables are in the fridge. Wednesday: a tray bake of sausages, peppers, red onion and potatoes, all on one "
    "tray so there is little washing up. Thursday: pasta with a tomato and lentil sauce; red lentils cook in about "
    "fifteen minutes and thicken the sauce nicely. Friday: homemade pizzas on flatbreads with mushrooms, sweetcorn "
    "and a little cheese. For the weekend, a big pot of minestrone makes lunch for two days. To save money, buy "
    "onions, carrots and potatoes loose, pick seasonal greens, and cook double portions of rice and sauce so that "
    "the next day's dinner is half ready. If there are vegetables either of you dislikes, tell me and I will swap "
    "them out. Would you like a shopping list to go with the plan?"
)
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

    from classifiers import SIGNALS, parse_conversation, shared_scorer
    from classifiers.encoder import default_model_path

    scorer = shared_scorer()
    bare = SentenceTransformer(str(default_model_path()), device="cpu", local_files_only=True)
    figures = {
        "date": date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, {torch.get_num_threads()} threads",
        "signals": len(scorer.heads_),
        "sentence_gate": scorer.sentence_gate,
    }
    print(f"all {figures['signals']} signals, {figures['machine']}")
    for label, user_turn, response in (("calm", CALM_USER_TURN, CALM_RESPONSE), ("at_risk", USER_TURN, RESPONSE)):
        conversation = parse_conversation([{"role": "user", "content": user_turn},
                                           {"role": "assistant", "content": response}])
        user_scores = {name: result.score for name, result in scorer.score(conversation, ("user",)).items()}
        highest = max(score for name, score in user_scores.items() if SIGNALS[name].kind == "harm")
        sentence_pass = scorer.scores_sentences(user_scores)
        ours = measure(lambda c=conversation: scorer.score(c), args.repeats)
        plain = measure(lambda texts=[user_turn, response]: bare.encode(texts, show_progress_bar=False), args.repeats)
        # distinct texts, so the batch cache cannot make throughput look better than real traffic
        batch = [parse_conversation([{"role": "user", "content": f"{user_turn} ({i})"},
                                     {"role": "assistant", "content": f"{response} ({i})"}]) for i in range(args.batch)]
        start = time.perf_counter()
        scorer.score_many(batch)
        throughput = args.batch / (time.perf_counter() - start)
        result = {
            "words": {"user": len(user_turn.split()), "response": len(response.split())},
            "highest_user_harm": round(highest, 3),
            "sentence_pass": sentence_pass,
            "couchguard_ms": {"p50": percentile(ours, 50), "p95": percentile(ours, 95)},
            "bare_encode_ms": {"p50": percentile(plain, 50), "p95": percentile(plain, 95)},
            "ratio_p50": statistics.median(ours) / statistics.median(plain),
            "batch_conversations_per_s": throughput,
        }
        figures[label] = result
        print(f"{label}: {result['words']['user']}-word user turn + {result['words']['response']}-word response, "
              f"highest user harm {highest:.2f}, sentence pass {'yes' if result['sentence_pass'] else 'no'}")
        print(f"  couchguard      p50 {result['couchguard_ms']['p50']:6.1f} ms   p95 {result['couchguard_ms']['p95']:6.1f} ms")
        print(f"  bare encode     p50 {result['bare_encode_ms']['p50']:6.1f} ms   p95 {result['bare_encode_ms']['p95']:6.1f} ms")
        print(f"  ratio (p50)     {result['ratio_p50']:.2f}")
        print(f"  batch           {throughput:.1f} conversations/s (batch of {args.batch})")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(figures, handle, indent=2)


if __name__ == "__main__":
    main()
