"""Street addresses in English ("42 Elm Street", "1600 Pennsylvania Ave", "221B Baker Street", "Flat 3"):
spaCy's NER tags cities, not house numbers. European forms are in address_eu.py."""

import regex
from presidio_analyzer import Pattern, PatternRecognizer

_SUFFIXES = (
    "Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|Terrace|Close|"
    "Crescent|Square|Sq|Parkway|Pkwy|Highway|Hwy|Gardens|Grove|Mews|Row|Walk|Hill|Rise|Vale|Parade|Green"
)


class StreetAddressRecognizer(PatternRecognizer):
    PATTERNS = [
        Pattern(
            "number street suffix", rf"\b\d{{1,5}}[A-Za-z]?\s+(?:[A-Z][A-Za-z'-]*\s+){{1,3}}(?:{_SUFFIXES})\b\.?", 0.6
        ),
        Pattern("apartment", r"\b(?:Apt|Apartment|Flat|Suite|Unit)\.?\s*#?\s*\d+[A-Za-z]?\b", 0.4),
    ]

    def __init__(self) -> None:
        # case-insensitive on purpose: people type "42 elm street" in a chat
        super().__init__(
            supported_entity="STREET_ADDRESS",
            patterns=self.PATTERNS,
            name="StreetAddressRecognizer",
            global_regex_flags=regex.MULTILINE | regex.IGNORECASE,
        )
