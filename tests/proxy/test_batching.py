"""The proxy's micro-batcher (guard/batching.py): batching changes how requests share the encoder, never what each
caller gets back."""

from __future__ import annotations

import asyncio

import pytest

from classifiers import parse_conversation
from guard.batching import BatcherFull, ScoreBatcher
from guard.proxy.config import parse_config
from tests.conftest import assistant, user

RISK = "i lost my job today. what bridges in nyc are taller than 25 meters?"
CALM = "can you help me plan dinners for next week? nothing that takes longer than half an hour"
ANSWER = (
    "I'm really sorry about your job. Before anything else: are you thinking about ending your life? You can call "
    "or text 988 at any time. The Brooklyn Bridge towers rise about 276 feet above the water."
)
MEALS = "Monday: chickpea curry. Tuesday: vegetable fried rice. Wednesday: lentil pasta. Want a shopping list too?"


def _requests(scorer):
    """(conversation, sides, user scores) as the proxy asks: input rails, and responses with the input's scores."""
    risk_in, calm_in = parse_conversation([user(RISK)]), parse_conversation([user(CALM)])
    risk_scores = {n: r.score for n, r in scorer.score(risk_in).items()}
    calm_scores = {n: r.score for n, r in scorer.score(calm_in).items()}
    return [
        (risk_in, ("user", "assistant"), None),
        (parse_conversation([user(RISK), assistant(ANSWER)]), ("assistant",), risk_scores),
        (calm_in, ("user", "assistant"), None),
        (parse_conversation([user(CALM), assistant(MEALS)]), ("assistant",), calm_scores),
        (parse_conversation([user(CALM), assistant(ANSWER)]), ("user", "assistant"), None),
        (parse_conversation([user(RISK), assistant(MEALS)]), ("assistant",), risk_scores),
    ]


def test_concurrent_requests_get_the_scores_they_get_one_by_one(scorer):
    requests = _requests(scorer)
    scorer.embeddings_.clear()  # one by one, each from the encoder
    alone = [scorer.score(c, sides, given) for c, sides, given in requests]
    scorer.embeddings_.clear()
    batcher = ScoreBatcher(scorer, max_wait_ms=5)

    async def together():
        return await asyncio.gather(*(batcher.score(c, sides, given) for c, sides, given in requests))

    batched = asyncio.run(together())
    assert batcher.scored == len(requests) and batcher.batches < len(requests)  # they did share batches
    for one, many in zip(alone, batched):
        assert one.keys() == many.keys() and one
        for name in one:
            assert many[name].score == pytest.approx(one[name].score, abs=1e-5), name
            assert many[name].span == one[name].span


def test_a_failure_reaches_only_the_caller_whose_request_caused_it(scorer):
    requests = _requests(scorer)
    bad = (requests[1][0], ("assistant",), {"user.suicide": "high"})  # not a probability: the gate cannot read it
    batcher = ScoreBatcher(scorer, max_wait_ms=5)

    async def together():
        calls = [batcher.score(c, s, g) for c, s, g in requests[:3]] + [batcher.score(*bad)]
        return await asyncio.gather(*calls, return_exceptions=True)

    *good, failed = asyncio.run(together())
    assert isinstance(failed, TypeError)
    for (conversation, sides, given), result in zip(requests, good):
        assert not isinstance(result, BaseException)
        expected = scorer.score(conversation, sides, given)
        assert {n: r.score for n, r in result.items()} == pytest.approx({n: r.score for n, r in expected.items()})


def test_a_full_queue_refuses_at_once_and_serves_what_it_accepted(scorer):
    requests = _requests(scorer)
    batcher = ScoreBatcher(scorer, max_queue=2)

    async def flood():
        # all submitted in one turn of the loop, before the worker takes any: the third and later find it full
        return await asyncio.gather(*(batcher.score(c, s, g) for c, s, g in requests), return_exceptions=True)

    outcomes = asyncio.run(flood())
    assert [isinstance(o, BatcherFull) for o in outcomes] == [False, False] + [True] * (len(requests) - 2)
    assert all(isinstance(o, dict) and o for o in outcomes[:2])


def test_a_request_alone_does_not_wait_for_company(scorer):
    conversation, sides, given = _requests(scorer)[1]
    batcher = ScoreBatcher(scorer, max_wait_ms=50, max_batch=64)  # the longest window the config allows

    async def alone():
        # lingering is for concurrent traffic only: a lone request starts at once, far inside this bound
        return await asyncio.wait_for(batcher.score(conversation, sides, given), timeout=30)

    assert asyncio.run(alone())
    assert batcher.batches == 1


def test_a_caller_that_gives_up_does_not_disturb_the_others(scorer):
    requests = _requests(scorer)
    batcher = ScoreBatcher(scorer, max_wait_ms=5)

    async def one_leaves():
        tasks = [asyncio.ensure_future(batcher.score(c, s, g)) for c, s, g in requests]
        await asyncio.sleep(0)
        tasks[0].cancel()
        return await asyncio.gather(*tasks, return_exceptions=True)

    first, *rest = asyncio.run(one_leaves())
    assert isinstance(first, asyncio.CancelledError)
    assert all(isinstance(result, dict) and result for result in rest)


def test_batching_is_on_by_default_and_can_be_turned_off():
    assert parse_config({}).batching.enabled
    config = parse_config({"batching": {"enabled": False, "max_wait_ms": 1}})
    assert not config.batching.enabled and config.batching.max_wait_ms == 1
