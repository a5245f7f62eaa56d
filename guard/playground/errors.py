"""Bad input from the page: one exception type, answered as a 400 with a message a person can act on."""

from __future__ import annotations


class BadRequest(ValueError):
    """The request cannot be served as sent; the message is shown in the page as it is."""
