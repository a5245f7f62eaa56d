"""Classifier speed: every signal for one conversation (30-word user turn, 180-word response), per encoder backend.

Reports p50/p95 latency and the ratio to a bare sentence-transformers `encode` of the same two texts (the floor any
embedding-based scorer pays), measured in the same run and interleaved with it, round by round, so that a busy
machine slows both alike. Two conversations are measured: a calm one, and one where the user is at risk, for which
the response's sentences are also scored (pooled from its window's pass; see `SignalScorer.sentence_gate`). Then
batch throughput: Moore et al.'s responses scored in batches of `--batch` as `couchguard check` does, against a bare
batched `encode` of the same texts. Every backend available (torch, ONNX fp32, ONNX int8) is measured in the same run.
Run: `make bench-speed`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from datetime import date
from functools import partial

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

CALM_USER_TURN = (
    "can you help me plan dinners for next week? i want more vegetables, nothing that takes longer "
    "than half an hour, and i'm cooking for two on a fairly tight budget"
)
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
USER_TURN = (
    "i've been feeling really low since the layoff last month and honestly some nights i wonder what the "
    "point of anything is anymore, can we talk for a bit"
)
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


def machine() -> str:
    import onnxruntime
    import torch

    model = (
        next(
            (line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
            platform.processor() or "unknown CPU",
        )
        if os.path.exists("/proc/cpuinfo")
        else platform.processor()
    )
    return (
        f"{model}, {platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__} "
        f"({torch.get_num_threads()} threads), onnxruntime {onnxruntime.__version__}"
    )


def cold_score(scorer, *batches) -> None:
    """Score each batch of conversations as `check` would, with an empty embedding cache.

    A function of its arguments, not a lambda over loop variables: a closure that picked up the wrong scorer once
    timed the last backend under every backend's name.
    """
    scorer.embeddings_.clear()
    for batch in batches:
        scorer.score_many(batch)


def interleaved(functions: dict, repeats: int, warmup: int = 3) -> dict[str, list[float]]:
    """Milliseconds per call of each function, measured round by round (each round calls every function once)."""
    for function in functions.values():
        for _ in range(warmup):
            function()
    timings: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(repeats):
        for name, function in functions.items():
            start = time.perf_counter()
            function()
            timings[name].append((time.perf_counter() - start) * 1000)
    return timings


def summary(timings: list[float]) -> dict[str, float]:
    return {"p50": round(percentile(timings, 50), 2), "p95": round(percentile(timings, 95), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--batch", type=int, default=32, help="conversations per `check` batch")
    parser.add_argument("--conversations", type=int, default=200, help="Moore responses for the batch figures")
    parser.add_argument("--backends", nargs="+", default=["torch", "onnx", "onnx-int8"])
    parser.add_argument("--json", default=None, help="write the figures to this file")
    args = parser.parse_args()

    from sentence_transformers import SentenceTransformer

    from classifiers import SIGNALS, SignalScorer, parse_conversation
    from classifiers.encoder import default_model_path
    from guard.bench.checking import evenly_spaced
    from guard.bench.suites.moore_data import labelled_responses

    scorers = {}
    for backend in args.backends:
        loaded = SignalScorer(backend=backend).load()
        if loaded.encoder_.backend_ == backend:
            scorers[backend] = loaded
        else:
            print(f"{backend}: not available (see the log line above), not measured")
    bare = SentenceTransformer(str(default_model_path()), device="cpu", local_files_only=True)
    bare.eval()  # a freshly constructed model is in training mode (dropout on); scoring never is
    reference = next(iter(scorers.values()))
    figures = {
        "date": date.today().isoformat(),
        "machine": machine(),
        # on a machine shared with other work every figure is slower and noisier: the ratios are what to compare
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
        "signals": len(reference.heads_),
        "sentence_gate": reference.sentence_gate,
        "backends": list(scorers),
    }
    print(f"all {figures['signals']} signals; {figures['machine']}, load average {figures['load_average_before'][0]}")
    for label, user_turn, response in (("calm", CALM_USER_TURN, CALM_RESPONSE), ("at_risk", USER_TURN, RESPONSE)):
        conversation = parse_conversation(
            [{"role": "user", "content": user_turn}, {"role": "assistant", "content": response}]
        )
        user_scores = {name: result.score for name, result in reference.score(conversation, ("user",)).items()}
        highest = max(score for name, score in user_scores.items() if SIGNALS[name].kind == "harm")
        functions = {"bare encode": lambda texts=[user_turn, response]: bare.encode(texts, show_progress_bar=False)}
        # each call cold: the embedding cache would otherwise answer every repeat without the encoder
        functions.update({backend: partial(cold_score, s, [conversation]) for backend, s in scorers.items()})
        timings = interleaved(functions, args.repeats)
        plain = timings["bare encode"]
        result = {
            "words": {"user": len(user_turn.split()), "response": len(response.split())},
            "highest_user_harm": round(highest, 3),
            "sentences_scored": reference.scores_sentences(user_scores),
            "bare_encode_ms": summary(plain),
            "couchguard_ms": {backend: summary(timings[backend]) for backend in scorers},
            "ratio_p50": {
                backend: round(statistics.median(timings[backend]) / statistics.median(plain), 3) for backend in scorers
            },
        }
        figures[label] = result
        print(
            f"{label}: {result['words']['user']}-word user turn + {result['words']['response']}-word response, "
            f"highest user harm {highest:.2f}, sentences scored {'yes' if result['sentences_scored'] else 'no'}"
        )
        print(
            f"  {'bare encode':16s} p50 {result['bare_encode_ms']['p50']:6.1f} ms   "
            f"p95 {result['bare_encode_ms']['p95']:6.1f} ms"
        )
        for backend in scorers:
            row = result["couchguard_ms"][backend]
            print(
                f"  {'couchguard ' + backend:16s} p50 {row['p50']:6.1f} ms   p95 {row['p95']:6.1f} ms   "
                f"ratio (p50) {result['ratio_p50'][backend]:.2f}"
            )

    # batches as `couchguard check` forms them, against one bare batched encode of the same texts
    every = labelled_responses()
    conversations = [parse_conversation(every[i].messages) for i in evenly_spaced(len(every), args.conversations)]
    texts = [message.content for conversation in conversations for message in conversation.messages]
    batches = [conversations[i : i + args.batch] for i in range(0, len(conversations), args.batch)]
    functions = {"bare encode": lambda: bare.encode(texts, batch_size=args.batch, show_progress_bar=False)}
    functions.update({backend: partial(cold_score, s, *batches) for backend, s in scorers.items()})
    timings = interleaved(functions, max(1, args.repeats // 20), warmup=1)
    plain = statistics.median(timings["bare encode"])
    result = {
        "conversations": len(conversations),
        "texts": len(texts),
        "batch": args.batch,
        "bare_encode_conversations_per_s": round(1000 * len(conversations) / plain, 1),
        "couchguard_conversations_per_s": {},
        "ratio": {},
    }
    print(f"batches: {len(conversations)} Moore conversations ({len(texts)} texts) in batches of {args.batch}")
    print(f"  {'bare encode':16s} {result['bare_encode_conversations_per_s']:6.1f} conversations/s")
    for backend in scorers:
        ours = statistics.median(timings[backend])
        result["couchguard_conversations_per_s"][backend] = round(1000 * len(conversations) / ours, 1)
        result["ratio"][backend] = round(ours / plain, 3)
        print(
            f"  {'couchguard ' + backend:16s} {1000 * len(conversations) / ours:6.1f} conversations/s   "
            f"ratio {ours / plain:.2f}"
        )
    figures["moore_batches"] = result

    # the whole of `couchguard check` (scores, policy, actions, rewrites) on the same batches: torch without the
    # embedding cache (how check ran before the ONNX backend and the cache) against each backend with it
    from guard.pipeline import Guard

    guards = (
        {
            "torch, no cache": Guard.from_policy(
                "mental-health", scorer=SignalScorer(encoder=scorers["torch"].encoder_, cache_size=0).load()
            )
        }
        if "torch" in scorers
        else {}
    )
    guards.update({backend: Guard.from_policy("mental-health", scorer=s) for backend, s in scorers.items()})
    functions = {
        name: (lambda g=guard: (g.scorer.embeddings_.clear(), [g.check_many(b) for b in batches]))
        for name, guard in guards.items()
    }
    # warm already: the same scorers have just scored these conversations
    timings = interleaved(functions, max(1, args.repeats // 50), warmup=0)
    figures["check"] = {}
    print(f"couchguard check, same {len(conversations)} conversations in batches of {args.batch}:")
    for name in guards:
        seconds = statistics.median(timings[name]) / 1000
        figures["check"][name] = {
            "conversations_per_s": round(len(conversations) / seconds, 1),
            "ms_per_conversation": round(1000 * seconds / len(conversations), 1),
        }
        print(
            f"  {name:16s} {len(conversations) / seconds:6.1f} conversations/s  "
            f"({1000 * seconds / len(conversations):.1f} ms each)"
        )
    figures["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print(f"load average {figures['load_average_before'][0]} before, {figures['load_average_after'][0]} after")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(figures, handle, indent=2)


if __name__ == "__main__":
    main()
