"""moore2025 live mode: responses to the 10 stimuli from any LLM (litellm), measured by the same code.

Each stimulus is sent `--samples` times (optionally after the Moore steel-man system prompt). The output rail runs
with a real upstream, so `rewrite` can regenerate with a corrective instruction. With `--judge`, an LLM answers the
stimulus's yes/no question about the response and about what the user finally receives; without it the run is
reported as unjudged (actions only).
"""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING

from classifiers.conversation import parse_conversation

from ..cache import CompletionCache
from ..judge import judge
from ..live import Completer, Endpoint, gather_with_progress
from ..stats import pct
from ..types import BenchOptions, SuiteRun
from .moore_data import Stimulus, steel_man_prompt, stimuli
from .moore_measure import LIVE_RECEIVED_RULE, Outcome, build_run, summarise

if TYPE_CHECKING:
    from ...pipeline import Guard


def run_live(guard: "Guard", options: BenchOptions) -> SuiteRun:
    return asyncio.run(_run(guard, options))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "model"


async def _run(guard: "Guard", options: BenchOptions) -> SuiteRun:
    if options.samples < 1:
        raise ValueError(f"--samples must be at least 1, got {options.samples}")
    if options.model is None:
        raise ValueError("the live run needs --model")
    model = options.model
    chosen = list(stimuli())[: options.limit] if options.limit else list(stimuli())
    cache = CompletionCache(options.cache_dir / f"moore2025-{_slug(model)}.jsonl")
    generator = Completer(Endpoint(model, options.api_base, options.temperature), cache, options.concurrency)
    judge_with = None
    if options.judge:
        judge_cache = CompletionCache(options.cache_dir / f"judge-{_slug(options.judge)}.jsonl")
        judge_with = Completer(
            Endpoint(options.judge, options.judge_api_base, temperature=0.0, max_tokens=5),
            judge_cache,
            options.concurrency,
        )
    system = [{"role": "system", "content": steel_man_prompt()}] if options.steel_man else []
    jobs = [(stimulus, sample) for stimulus in chosen for sample in range(options.samples)]

    responses = await gather_with_progress(
        [generator.complete(system + s.turns, sample) for s, sample in jobs],
        f"moore2025: {options.model}",
        options.progress,
    )
    conversations = [
        parse_conversation(system + s.turns + [{"role": "assistant", "content": r}])
        for (s, _), r in zip(jobs, responses)
    ]
    batch = guard.scorer.score_many(conversations)
    decisions = await gather_with_progress(
        [
            guard.output_rail(
                c, regenerate=_regenerator(generator, sample), scores={n: r.score for n, r in scores.items()}
            )
            for c, scores, (_, sample) in zip(conversations, batch, jobs)
        ],
        "moore2025: output rail",
        options.progress,
    )
    before = after = [None] * len(jobs)
    if judge_with is not None:
        before = await gather_with_progress(
            [judge(judge_with, s, r) for (s, _), r in zip(jobs, responses)],
            f"judging with {options.judge}",
            options.progress,
        )
        after = await gather_with_progress(
            [
                _judge_received(judge_with, s, r, d.text, b)
                for (s, _), r, d, b in zip(jobs, responses, decisions, before)
            ],
            "judging what users receive",
            options.progress,
        )
    outcomes = [
        Outcome(
            id=f"live-{s.stimulus_id}-{sample}",
            condition=s.condition,
            stimulus_id=s.stimulus_id,
            source=model,
            source_group="LLMs",
            appropriate=b,
            action=d.action,
            strategy=d.strategy,
            rules=d.rules,
            signals=d.signals,
            received_appropriate=a,
            extra={"response": r, "received": d.text, "attempts": d.attempts},
        )
        for (s, sample), r, d, b, a in zip(jobs, responses, decisions, before, after)
    ]
    summary = summarise(
        outcomes,
        suite="moore2025",
        policy=guard.policy.name,
        mode="live",
        rule=LIVE_RECEIVED_RULE,
        extra={
            "model": options.model,
            "api_base": options.api_base,
            "judge": options.judge,
            "steel_man": options.steel_man,
            "samples": options.samples,
            "temperature": options.temperature,
            "model_calls": generator.calls,
            "cache": str(cache.path),
        },
    )
    run = build_run(outcomes, summary, guard.thresholds())
    if judge_with is None:
        actions = ", ".join(f"{k} {v}" for k, v in sorted(summary["unjudged_actions"].items()))
        run.headline = (
            f"{len(outcomes)} responses from {options.model}, unjudged (add --judge MODEL to measure "
            f"appropriateness): {actions}"
        )
        run.tables = [t for t in run.tables if t.title != "Appropriate as the user receives it"]
    else:
        received = summary["received_appropriate"]["all"]
        run.headline += (
            f"; appropriate as received {pct(received['before'])} before, {pct(received['after'])} after couchguard"
        )
    return run


def _regenerator(generator: Completer, sample: int):
    """Each regeneration attempt is a distinct sample, so a retry is not answered from the cache with the same text."""
    attempt = 0

    async def regenerate(messages: list[dict]) -> str:
        nonlocal attempt
        attempt += 1
        return await generator.complete(messages, sample=f"{sample}/regenerate-{attempt}")

    return regenerate


async def _judge_received(
    completer: Completer, stimulus: Stimulus, response: str, received: str | None, before: bool | None
) -> bool | None:
    if received is None or received == response:
        return before
    return await judge(completer, stimulus, received)
