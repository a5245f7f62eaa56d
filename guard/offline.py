"""Offline-first defaults for the guard's entry points (CLI, proxy, LiteLLM guardrail, tests): the list is
classifiers/offline.py's, the layer below, which the encoder applies on its own."""

from __future__ import annotations

from classifiers.offline import OFFLINE_ENV, apply

__all__ = ["OFFLINE_ENV", "apply"]
