"""Street addresses ("42 Elm Street", "1600 Pennsylvania Ave"): spaCy's NER tags cities, not house numbers."""

from presidio_analyzer import Pattern, PatternRecognizer

_SUFFIXES = ("Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|Terrace|Close|"
             "Crescent|Square|Sq|Parkway|Pkwy|Highway|Hwy")


class StreetAddressRecognizer(PatternRecognizer):
    PATTERNS = [
        Pattern("number street suffix", rf"\b\d{{1,5}}[A-Za-z]?\s+(?:[A-Z][A-Za-z'-]*\s+){{1,3}}(?:{_SUFFIXES})\b\.?", 0.6),
        Pattern("apartment", r"\b(?:Apt|Apartment|Flat|Suite|Unit)\.?\s*#?\s*\d+[A-Za-z]?\b", 0.4),
    ]

    def __init__(self) -> None:
        super().__init__(supported_entity="STREET_ADDRESS", patterns=self.PATTERNS, name="StreetAddressRecognizer")
