"""Postal codes: UK postcodes and Canadian codes by their shape; US ZIP and 5-digit European codes only in
address context.

A UK postcode ("SW1A 1AA") or a Canadian one ("K1A 0B1") has a shape few other strings share, so it is recognised
on its own (case-sensitive: "sw1a 1aa" in running text is rarer than an innocent lowercase look-alike). A bare
five-digit number is usually a count or a price, so a ZIP or a French/German/Spanish/Italian code is recognised
only after a state, after a keyword ("zip code", "PLZ", "code postal") or before a town at the end of an address
line (", 75011 Paris").
"""

from __future__ import annotations

import regex
from presidio_analyzer import Pattern, PatternRecognizer

_STATES = (
    "AL|AK|AZ|AR|CA|CO|CT|DE|DC|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|NE|NV|NH|NJ|NM|NY|"
    "NC|ND|OH|OK|OR|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY|PR"
)
_STATE_NAMES = (
    "Alabama|Alaska|Arizona|Arkansas|California|Colorado|Connecticut|Delaware|Florida|Georgia|Hawaii|"
    "Idaho|Illinois|Indiana|Iowa|Kansas|Kentucky|Louisiana|Maine|Maryland|Massachusetts|Michigan|"
    "Minnesota|Mississippi|Missouri|Montana|Nebraska|Nevada|New Hampshire|New Jersey|New Mexico|"
    "New York|North Carolina|North Dakota|Ohio|Oklahoma|Oregon|Pennsylvania|Rhode Island|"
    "South Carolina|South Dakota|Tennessee|Texas|Utah|Vermont|Virginia|Washington|West Virginia|"
    "Wisconsin|Wyoming"
)
_UPPER = "A-ZÀ-ÖØ-ÞŁŚŻ"
_LOWER = "a-zß-öø-ÿłśżąęń"


class PostalCodeRecognizer(PatternRecognizer):
    PATTERNS = [
        Pattern("UK postcode", r"\b(?:[A-PR-UWYZ][A-HK-Y]?\d[A-Z\d]?\s?\d[ABD-HJLNP-UW-Z]{2}|GIR\s?0AA)\b", 0.5),
        Pattern("CA postal code", r"\b[ABCEGHJ-NPRSTVXY]\d[ABCEGHJ-NPRSTV-Z][\s\-]?\d[ABCEGHJ-NPRSTV-Z]\d\b", 0.5),
        Pattern("US ZIP+4", r"\b\d{5}-\d{4}\b", 0.4),
        Pattern("US state then ZIP", rf"\b(?:{_STATES}|{_STATE_NAMES})\.?,?\s{{1,3}}\d{{5}}(?:-\d{{4}})?\b", 0.6),
        Pattern(
            "keyword then code",
            r"(?:\b(?i:zip(?:\s?code)?|post\s?code|postal\s?code|code\s+postal|c[oó]digo\s+postal|codice\s+postale"
            r"|postleitzahl)|\b(?:PLZ|CP|CAP|C\.P\.))\s*(?:is\s+)?[:#.]?\s*\d{4,5}(?:-\d{4})?\b",
            0.6,
        ),
        # ", 75011 Paris", "D-10115 Berlin" at the end of an address line, "28013 Madrid" after a street
        Pattern(
            "code before town",
            rf"(?:(?<=,\s{{0,3}})|(?<=^\s{{0,3}})|\b[DFIE]-)\d{{5}}(?=\s+[{_UPPER}][{_LOWER}]+)",
            0.5,
        ),
    ]
    CONTEXT = ["zip", "postcode", "postal", "address", "live", "plz", "adresse", "dirección", "indirizzo"]

    def __init__(self) -> None:
        super().__init__(
            supported_entity="POSTAL_CODE",
            patterns=self.PATTERNS,
            context=self.CONTEXT,
            name="PostalCodeRecognizer",
            global_regex_flags=regex.MULTILINE,
        )
