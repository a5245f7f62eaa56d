from guard import offline

offline.apply()  # before any model or litellm import

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def scorer():
    from classifiers import shared_scorer

    return shared_scorer()


@pytest.fixture(scope="session")
def guard(scorer):
    from guard.pipeline import Guard

    return Guard.from_policy("mental-health", scorer=scorer)


def user(text):
    return {"role": "user", "content": text}


def assistant(text):
    return {"role": "assistant", "content": text}


# Tests that need the trained models or a running server are `slow`: `pytest -m "not slow"` is the quick loop.
# A test is slow when it uses a fixture below (directly or through another fixture); modules that reach the models
# another way (a subprocess, a corpus scan, a training run) carry `pytestmark = pytest.mark.slow`, or are named here
# when they belong to another package's tests or every test in them is slow.
SLOW_FIXTURES = {"scorer", "guard", "proxy", "patient_proxy", "client", "upstream", "audit_rows", "redactor"}
SLOW_MODULES = {
    "test_corpus_hygiene.py",
    "test_sentences.py",
    "test_training.py",
    "test_onnx_backend.py",
    "test_pii_corpus.py",
    # regular expressions only, but presidio_analyzer's import alone takes about 10 s
    "test_recognizers.py",
    "test_litellm_guardrail.py",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())) or item.path.name in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)


def pytest_ignore_collect(collection_path, config):
    # the quick loop does not even import modules whose every test is slow (litellm alone takes seconds)
    if config.getoption("markexpr") == "not slow" and collection_path.name in SLOW_MODULES:
        return True
    return None
