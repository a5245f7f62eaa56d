"""URLs, with presidio's patterns bounded so that scanning stays linear in the length of the text.

presidio's UrlRecognizer starts its host part with `[a-z0-9.\\-]{1,253}[.]` followed by some 500 top-level
domains: at every position of a run of dots (or of any host-like characters) the engine tries up to 253 lengths
times every domain, so "." * 1000 took seconds and "." * 8000 a minute. Here a host is a sequence of DNS labels
(each starts and ends with a letter or digit, at most 63 characters), and a match may only begin where a host can
begin (not inside another label): a run of dots then fails at once, and each position is tried a bounded number of
times. The domain list, schemes, quoting and scores are presidio's own, so what counts as a URL does not change.
"""

from __future__ import annotations

from presidio_analyzer import Pattern, PatternRecognizer
from presidio_analyzer.predefined_recognizers import UrlRecognizer

# presidio's expression is "((www\d{0,3}[.])?[a-z0-9.\-]{1,253}[.](?:com)|...)(?:/path)?)": keep its domain list
# and path, replace the unbounded host
_UNBOUNDED_HOST = r"((www\d{0,3}[.])?[a-z0-9.\-]{1,253}[.]"
assert UrlRecognizer.BASE_URL_REGEX.startswith(_UNBOUNDED_HOST), "presidio changed its URL expression"
_TAIL = UrlRecognizer.BASE_URL_REGEX[len(_UNBOUNDED_HOST) :]
_LABEL = r"[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?"
# the domain must end the host: "example.comfoo" is not example.com
BASE_URL_REGEX = rf"((?<![a-z0-9.\-])(?:{_LABEL}[.]){{1,8}}" + _TAIL.replace(")(?:/", r")(?![a-z0-9\-])(?:/", 1)


class BoundedUrlRecognizer(PatternRecognizer):
    PATTERNS = [
        Pattern("Standard Url", "(?i)(?:https?://)" + BASE_URL_REGEX, 0.6),
        Pattern("Non schema URL", "(?i)" + BASE_URL_REGEX, 0.5),
        Pattern("Quoted URL", r'(?i)["\'](https?://' + BASE_URL_REGEX + r')["\']', 0.6),
        Pattern("Quoted Non-schema URL", r'(?i)["\'](' + BASE_URL_REGEX + r')["\']', 0.5),
    ]

    def __init__(self) -> None:
        super().__init__(
            supported_entity="URL", patterns=self.PATTERNS, context=UrlRecognizer.CONTEXT, name="BoundedUrlRecognizer"
        )
