"""Offline-first defaults, set before any third-party import reads them: no model hub, no litellm cost-map fetch.

The one list of them, here in the lowest layer so that the encoder applies it without importing guard/; the CLI, the
proxy, the LiteLLM guardrail and the tests apply it through `guard.offline`. A value already set in the environment
wins (an operator may opt in to the network). Nothing heavy is imported here: it runs first.
"""

from __future__ import annotations

import os

OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
}


def apply() -> None:
    for name, value in OFFLINE_ENV.items():
        os.environ.setdefault(name, value)
