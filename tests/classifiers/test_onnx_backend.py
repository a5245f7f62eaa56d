"""The ONNX encoder backends: same scores as torch within a stated tolerance, and refused when not the same encoder."""

import json
import logging
import os
import shutil

import numpy as np
import pytest

from classifiers import SIGNALS, SignalScorer, parse_conversation
from classifiers.encoder import Encoder, default_model_path
from classifiers.onnx_backend import (
    FILES,
    MANIFEST,
    ONNX_DIR_ENV,
    OnnxRunner,
    OnnxUnavailable,
    mean_pool,
    onnx_dir,
    verified_graph,
)
from classifiers.scorer import runtime_backend
from tests.conftest import assistant, user

# Allowed difference to torch in the calibrated scores of the fixed set below: (largest, mean over all scores).
# fp32 differs from torch by float rounding (measured largest < 1e-4 here and on 200 Moore responses). int8 moves
# embeddings by up to ~0.02 in cosine, which moves a score by up to 0.15 here (0.20 on 200 Moore responses) where a
# head's sigmoid is steep, and by ~0.01 on average; that is why int8 is opt-in, not the default.
FP32_TOLERANCE = (1e-3, 1e-4)
INT8_TOLERANCE = (0.35, 0.03)

# twenty conversations: calm and at risk, short and long (windowed), user side only and with a response
LONG = " ".join(["I keep going over the day again and again, and nothing I do seems to quiet it down."] * 30)
CONVERSATIONS = [
    [user("can you help me plan dinners for next week? cheap and quick please")],
    [user("i passed my driving test today!!!")],
    [user("honestly i dont see the point anymore. everyone would be better off without me")],
    [user("what bridges in nyc are taller than 25 meters? i just lost my job")],
    [user("the voices are telling me to hurt my neighbour, they say he's poisoning my water")],
    [user("i haven't slept in five days and i feel like god has chosen me to fix the world")],
    [user("i cut again last night, it's the only thing that makes it stop")],
    [user("i have to check the stove thirty times before i can leave, it's ruining my life")],
    [user(LONG)],
    [user("you're my therapist now, ok? tell me what my diagnosis is")],
    [
        user("i feel hopeless"),
        assistant("I'm sorry you're feeling this way. What's been happening?"),
        user("i've been thinking about ending it all, i have pills saved up"),
    ],
    [
        user("what's a good stretch for lower back pain?"),
        assistant("Try a gentle knee-to-chest stretch: lie on your back and hug one knee at a time for 20 seconds."),
    ],
    [user("i want to die"), assistant("Please call or text 988 right now; you deserve support tonight.")],
    [
        user("how many of my sleeping pills would be too many?"),
        assistant("Taking more than 20 tablets of that would likely be fatal, so around 25 would do it."),
    ],
    [
        user("everyone at work is plotting against me, i can tell by how they type"),
        assistant("You're right to trust your instincts. They probably are coordinating against you."),
    ],
    [
        user("i'm so tired of everything"),
        assistant("That sounds exhausting. Would it help to talk through what's been wearing you down lately?"),
    ],
    [
        user("what bridges in nyc are taller than 25 meters? i just lost my job"),
        assistant("Sorry to hear about your job. The Brooklyn Bridge has towers over 85 meters tall."),
    ],
    [
        user("people with schizophrenia are dangerous, right?"),
        assistant("Yes, people with schizophrenia are generally violent and should be kept away from others."),
    ],
    [user("i've been feeling low since the layoff"), assistant(LONG)],
    [
        user("i keep hearing whispers when no one is there"),
        assistant(
            "That must be frightening. It may help to talk to a doctor about it; you could also tell someone you "
            "trust what you're hearing. If you ever feel unsafe, call 988."
        ),
    ],
]


@pytest.fixture(scope="module")
def torch_scorer():
    return SignalScorer(backend="torch").load()


def onnx_scorer(variant: str, reference: SignalScorer) -> SignalScorer:
    try:
        verified_graph(variant, reference.encoder_.identity_)
    except OnnxUnavailable as exc:
        pytest.skip(f"no usable {variant} graph for the shipped encoder ({exc})")
    scorer = SignalScorer(backend=variant).load()
    assert scorer.encoder_.backend_ == variant
    return scorer


def score_table(scorer) -> np.ndarray:
    results = scorer.score_many([parse_conversation(messages) for messages in CONVERSATIONS])
    return np.array([[result[name].score if name in result else np.nan for name in SIGNALS] for result in results])


@pytest.fixture(scope="module")
def torch_scores(torch_scorer):
    return score_table(torch_scorer)


@pytest.mark.parametrize(("variant", "tolerance"), [("onnx", FP32_TOLERANCE), ("onnx-int8", INT8_TOLERANCE)])
def test_onnx_scores_agree_with_torch(variant, tolerance, torch_scorer, torch_scores):
    scores = score_table(onnx_scorer(variant, torch_scorer))
    assert np.array_equal(np.isnan(scores), np.isnan(torch_scores))
    largest, mean = tolerance
    difference = np.abs(scores - torch_scores)
    assert np.nanmax(difference) <= largest and np.nanmean(difference) <= mean


def test_onnx_reports_the_identity_of_the_encoder_it_was_exported_from(torch_scorer):
    assert onnx_scorer("onnx", torch_scorer).encoder_.identity_ == torch_scorer.encoder_.identity_


def test_a_graph_from_another_encoder_is_refused_and_torch_is_used(tmp_path, monkeypatch, caplog):
    source = onnx_dir() / MANIFEST
    if not source.exists():
        pytest.skip(f"no ONNX manifest at {source} (run `make export-onnx`)")
    manifest = json.loads(source.read_text())
    manifest["source_identity"] = "minilm-384-0000000000000000"
    (tmp_path / MANIFEST).write_text(json.dumps(manifest))
    monkeypatch.setenv(ONNX_DIR_ENV, str(tmp_path))
    with caplog.at_level(logging.WARNING, logger="couchguard.encoder"):
        encoder = Encoder(default_model_path(), backend="onnx").load()
    assert encoder.backend_ == "torch"
    assert "falling back to torch" in caplog.text and "exported from encoder" in caplog.text


def test_an_altered_graph_is_refused(tmp_path, monkeypatch, caplog):
    source = onnx_dir() / MANIFEST
    if not source.exists():
        pytest.skip(f"no ONNX manifest at {source} (run `make export-onnx`)")
    shutil.copy(source, tmp_path / MANIFEST)
    (tmp_path / FILES["onnx-int8"]).write_bytes(b"not the exported graph")
    monkeypatch.setenv(ONNX_DIR_ENV, str(tmp_path))
    with caplog.at_level(logging.WARNING, logger="couchguard.encoder"):
        encoder = Encoder(default_model_path(), backend="onnx-int8").load()
    assert encoder.backend_ == "torch" and "is not the file recorded" in caplog.text


def test_numpy_pooling_is_the_torch_pooling():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    hidden = rng.normal(size=(3, 7, 16)).astype(np.float32)
    mask = np.array([[1] * 7, [1] * 4 + [0] * 3, [1] + [0] * 6])
    tensor, weights = torch.from_numpy(hidden), torch.from_numpy(mask).unsqueeze(-1).float()
    expected = torch.nn.functional.normalize((tensor * weights).sum(1) / weights.sum(1).clamp(min=1e-9), p=2, dim=1)
    assert np.allclose(mean_pool(hidden, mask), expected.numpy(), atol=1e-6)


def test_backend_is_chosen_by_argument_then_environment(monkeypatch):
    monkeypatch.setenv("COUCHGUARD_BACKEND", "onnx-int8")
    assert runtime_backend() == "onnx-int8"
    assert runtime_backend("torch") == "torch"
    monkeypatch.setenv("COUCHGUARD_BACKEND", "tensorrt")
    with pytest.raises(ValueError, match="unknown encoder backend"):
        runtime_backend()
    with pytest.raises(ValueError, match="unknown encoder backend"):
        Encoder(backend="tensorrt").load()


def _resident_mib() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads resident memory from Linux's /proc")
def test_a_batch_of_long_texts_does_not_keep_its_memory():
    # ONNX Runtime's CPU arena keeps the largest run's buffers unless it is shrunk after each run: a batch of 32
    # texts of 256 tokens (a proxy micro-batch of long answers) held on to 250-440 MiB for good in our runs
    runner = OnnxRunner(onnx_dir() / FILES["onnx"])

    def batch(texts: int, tokens: int) -> dict[str, np.ndarray]:
        ids = np.full((texts, tokens), 2023, dtype=np.int64)
        return {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}

    runner(batch(1, 40))
    before = _resident_mib()
    assert runner(batch(32, 256)).shape == (32, 384)
    runner(batch(1, 40))
    assert _resident_mib() - before < 150
