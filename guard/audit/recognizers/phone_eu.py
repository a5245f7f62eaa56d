"""UK and EU phone numbers in the forms people type them ("07700 900123", "+33 6 12 34 56 78", "030 12345678").

presidio's PhoneRecognizer (libphonenumber) keeps only numbers that are valid for a region it is asked about, and
ranges reserved for fiction or not yet allocated (Ofcom's 07700 900xxx, for instance) are not "valid", yet a user
typing one still gives away a phone number. These patterns recognise the shape: a country code or a national trunk
prefix, then digit groups of the lengths each country uses. Each pattern refuses to start or end inside a longer
digit run, so order numbers and years are left alone. The two shapes nothing else has (a European country code,
a UK mobile) score above spaCy's entities (0.85), so an audit reader sees <PHONE_NUMBER>, not <DATE_TIME>.
"""

from __future__ import annotations

import regex
from presidio_analyzer import Pattern, PatternRecognizer

_START = r"(?<![\d+\w])"
_END = r"(?![\d])"
_SEP = r"[\s.\-/]?"


class EuropeanPhoneRecognizer(PatternRecognizer):
    PATTERNS = [
        # +44 7700 900123, 0044 (0)20 7946 0958, +33 6 12 34 56 78, +49 30 1234567, +353 87 123 4567
        Pattern(
            "international (+3x/+4x)",
            rf"(?<![\d\w])(?:\+|00)(?:3\d{{1,2}}|4\d)[\s.\-]?(?:\(0\)[\s.\-]?)?\d{{1,4}}(?:{_SEP}\d{{2,4}}){{2,4}}{_END}",
            0.9,
        ),
        # UK mobile 07xxx xxxxxx, and geographic 020 7946 0958, 0161 496 0000, 01632 960123
        Pattern("UK mobile", rf"{_START}07\d{{3}}[\s\-]?\d{{3}}[\s\-]?\d{{3}}{_END}", 0.9),
        Pattern("UK geographic", rf"{_START}0[1-3]\d{{1,3}}[\s\-]?\d{{3,4}}[\s\-]?\d{{3,4}}{_END}", 0.4),
        # FR 06 12 34 56 78, 01.23.45.67.89, 0612345678
        Pattern("FR", rf"{_START}0[1-9](?:[\s.\-]?\d{{2}}){{4}}{_END}", 0.5),
        # DE 030 12345678, 0151 23456789, 089/1234567: a separator after the area code is required
        Pattern("DE", rf"{_START}0[1-9]\d{{1,4}}[\s/\-]\d{{3,8}}(?:[\s\-]\d{{1,5}})?{_END}", 0.4),
        # ES 612 345 678, 912 34 56 78 (grouped only: nine bare digits are too often something else)
        Pattern("ES", rf"{_START}[6-9]\d{{2}}[\s\-]\d{{2,3}}[\s\-]\d{{2,3}}(?:[\s\-]\d{{2}})?{_END}", 0.4),
        # IT mobile 333 123 4567 / 3331234567, landline 06 12345678, 02 1234 5678
        Pattern("IT mobile", rf"{_START}3\d{{2}}[\s\-]?\d{{3}}[\s\-]?\d{{3,4}}{_END}", 0.4),
        Pattern("IT landline", rf"{_START}0\d{{1,3}}[\s\-]\d{{3,4}}[\s\-]?\d{{3,4}}{_END}", 0.4),
        # NL mobile 06-12345678, 06 1234 5678
        Pattern("NL mobile", rf"{_START}06[\s\-]?\d{{4}}[\s\-]?\d{{4}}{_END}", 0.5),
        # IE mobile 087 123 4567, Dublin 01 234 5678
        Pattern("IE", rf"{_START}0(?:8[35-9]|1)[\s\-]?\d{{3}}[\s\-]?\d{{4}}{_END}", 0.5),
    ]
    CONTEXT = [
        "phone",
        "mobile",
        "call",
        "text",
        "number",
        "tel",
        "portable",
        "handy",
        "telefon",
        "teléfono",
        "telefono",
        "cellulare",
        "bel",
        "ring",
    ]

    def __init__(self) -> None:
        # digits only: no case folding needed
        super().__init__(
            supported_entity="PHONE_NUMBER",
            patterns=self.PATTERNS,
            context=self.CONTEXT,
            name="EuropeanPhoneRecognizer",
            global_regex_flags=regex.MULTILINE,
        )
