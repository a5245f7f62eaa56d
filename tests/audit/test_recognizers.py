"""The UK and EU recognizers, and their false positives: a number alone is not personal data."""

from __future__ import annotations

import pytest

from guard.audit.recognizers import (
    BoundedUrlRecognizer,
    EuropeanPhoneRecognizer,
    EuropeanStreetAddressRecognizer,
    PostalCodeRecognizer,
    StreetAddressRecognizer,
)

RECOGNIZERS = [
    BoundedUrlRecognizer(),
    EuropeanPhoneRecognizer(),
    EuropeanStreetAddressRecognizer(),
    PostalCodeRecognizer(),
    StreetAddressRecognizer(),
]

BENIGN = [
    "I walked 10000 steps today and slept 8 hours.",
    "It cost me 12500 dollars and I owe 25000 more.",
    "My order number 48213 never arrived, and in 2024 I moved 3 times.",
    "I scored 14520 points, page 12345 of my notes.",
    "Call 988 or the Samaritans on 116 123.",
    "I take 50 mg of sertraline twice a day since 2019.",
    "We were 15 people on the call at 10.30, it was fine.",
    "I bring 2 friends via the old road, during 3 weeks.",
    "The bill was 1,234.56 and the reference ABC123.",
    "i.e. it's over... and then... nothing.........",
    "Between 1990 and 2005 we lived abroad, 3 rue-side cafes later.",
]


def found(text: str) -> list[str]:
    return [text[r.start : r.end] for rec in RECOGNIZERS for r in rec.analyze(text, rec.supported_entities)]


@pytest.mark.parametrize("text", BENIGN)
def test_benign_numbers_are_not_personal_data(text):
    assert found(text) == []


@pytest.mark.parametrize(
    "text, value",
    [
        ("ring me on 07700 900123", "07700 900123"),
        ("+44 (0)20 7946 0958 is the office", "+44 (0)20 7946 0958"),
        ("mon portable: 06 12 34 56 78", "06 12 34 56 78"),
        ("Telefon 030 12345678", "030 12345678"),
        ("móvil +34 612 345 678", "+34 612 345 678"),
        ("cellulare 333 123 4567", "333 123 4567"),
        ("bel 06-12345678", "06-12345678"),
        ("mobile 087 123 4567", "087 123 4567"),
        ("I live at 221B Baker Street", "221B Baker Street"),
        ("12 rue de la Paix", "12 rue de la Paix"),
        ("ich wohne Hauptstraße 5", "Hauptstraße 5"),
        ("Berliner Straße 12, Berlin", "Berliner Straße 12"),
        ("en la Calle de Alcalá 23", "Calle de Alcalá 23"),
        ("in Via Giuseppe Garibaldi, 23", "Via Giuseppe Garibaldi, 23"),
        ("London SW1A 1AA", "SW1A 1AA"),
        ("Ottawa K1A 0B1", "K1A 0B1"),
        ("Springfield, IL 62704", "IL 62704"),
        ("zip code 94110", "zip code 94110"),
        ("12 rue Colbert, 13001 Marseille", "13001"),
    ],
)
def test_uk_and_eu_forms_are_found(text, value):
    assert value in found(text)


def test_the_url_recognizer_keeps_presidios_domains():
    assert "www.mind.org.uk/information" in found("see www.mind.org.uk/information today")
    assert "https://samaritans.org" in found("or https://samaritans.org.")
