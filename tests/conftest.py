import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pytest


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
