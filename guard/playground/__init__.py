"""The playground: a local web page to try a policy on a conversation, move thresholds and export an override."""

from .app import create_app

__all__ = ["create_app"]
