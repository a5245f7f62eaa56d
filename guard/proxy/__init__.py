"""`couchguard serve`: an OpenAI-compatible proxy that checks every conversation on its way to and from the model."""

from .. import offline

# litellm fetches its model cost map at import unless told not to; a guard proxy must work offline
offline.apply()

from .app import create_app  # noqa: E402
from .config import ConfigError, ServeConfig, load_config  # noqa: E402

__all__ = ["ConfigError", "ServeConfig", "create_app", "load_config"]
