"""Street addresses as they are written in France, Germany, the Netherlands, Spain and Italy.

French and Latin forms put the number first or last around a street-type word ("12 rue de la Paix",
"Calle Mayor 5", "Via Giuseppe Garibaldi, 23"); German and Dutch ones join the type to the name
("Hauptstraße 5", "Keizersgracht 123") or follow it ("Berliner Straße 12"). A house number is required in every
form, so "via Manchester" or "the high street" alone are left alone. Matching is case-insensitive because chat
text often is lowercase; every repetition is bounded, so scanning stays linear.
"""

import regex
from presidio_analyzer import Pattern, PatternRecognizer

_WORD = r"[\w'’.\-]{1,40}"
_CAPITAL_WORD = r"(?-i:[A-ZÀ-ÖØ-Þ][\w'’\-]{0,40})"
_FR_TYPES = (
    "rue|avenue|av\\.|bd|boulevard|place|chemin|impasse|allée|allee|quai|route|cours|passage|square|villa|"
    "cité|cite|sentier|faubourg|rond-point|résidence|residence"
)
_FR_LINKS = "de|du|des|la|le|les|l'|l’|d'|d’|saint|sainte|st|ste"
_DE_JOINED = "straße|strasse|str\\.|weg|platz|allee|gasse|damm|ufer|chaussee|gracht|straat|laan|plein|kade|singel|steeg"
_DE_SEPARATE = "Straße|Strasse|Str\\.|Weg|Platz|Allee|Gasse|Ring|Damm|Ufer|Chaussee"
_ES_TYPES = "calle|c/|avenida|avda\\.?|plaza|pza\\.?|paseo|camino|carretera|ronda|travesía|travesia|glorieta|rambla"
_ES_LINKS = "de|del|la|las|los|el|san|santa"
_IT_TYPES = "via|viale|piazza|piazzale|corso|largo|vicolo|strada|contrada|lungomare|lungotevere|borgo"
_IT_LINKS = "di|del|della|dei|degli|delle|dello|d'|d’|san|santa|santo"


class EuropeanStreetAddressRecognizer(PatternRecognizer):
    PATTERNS = [
        Pattern(
            "FR number then street",
            rf"\b\d{{1,4}}(?:\s?(?:bis|ter|[a-z]))?,?\s+(?:{_FR_TYPES})\s+(?:(?:{_FR_LINKS})\s*){{0,3}}{_WORD}"
            rf"(?:[\s\-]+{_CAPITAL_WORD}){{0,3}}",
            0.6,
        ),
        Pattern(
            "DE/NL joined street then number", rf"\b[\wäöüß\-]{{1,40}}(?:{_DE_JOINED})\s+\d{{1,4}}(?:\s?[a-z])?\b", 0.6
        ),
        Pattern(
            "DE separate street then number",
            rf"\b{_CAPITAL_WORD}\s+(?-i:{_DE_SEPARATE})\s+\d{{1,4}}(?:\s?[a-z])?\b",
            0.6,
        ),
        Pattern(
            "ES street then number",
            rf"\b(?:{_ES_TYPES})\s*(?:(?:{_ES_LINKS})\s+){{0,3}}{_WORD}(?:\s+{_CAPITAL_WORD}){{0,3}},?\s*"
            rf"(?:n[º°o]\.?\s*)?\d{{1,4}}[a-z]?\b",
            0.6,
        ),
        Pattern(
            "IT street then number",
            rf"\b(?:{_IT_TYPES})\s+(?:(?:{_IT_LINKS})\s*){{0,3}}{_WORD}(?:\s+{_CAPITAL_WORD}){{0,3}},?\s*"
            rf"(?:n\.?\s*)?\d{{1,4}}(?:/?[a-z])?\b",
            0.6,
        ),
    ]

    def __init__(self) -> None:
        super().__init__(
            supported_entity="STREET_ADDRESS",
            patterns=self.PATTERNS,
            name="EuropeanStreetAddressRecognizer",
            global_regex_flags=regex.MULTILINE | regex.IGNORECASE,
        )
