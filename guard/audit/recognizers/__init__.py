"""Recognizers presidio lacks (or has in a form too slow for untrusted text) for care conversations, one a file."""

from .address import StreetAddressRecognizer
from .address_eu import EuropeanStreetAddressRecognizer
from .phone_eu import EuropeanPhoneRecognizer
from .postal_code import PostalCodeRecognizer
from .record_number import RecordNumberRecognizer
from .url import BoundedUrlRecognizer

CUSTOM_RECOGNIZERS = (
    StreetAddressRecognizer,
    EuropeanStreetAddressRecognizer,
    EuropeanPhoneRecognizer,
    PostalCodeRecognizer,
    RecordNumberRecognizer,
    BoundedUrlRecognizer,
)
# presidio recognizers that these replace: its URL expression backtracks on runs of dots (see url.py)
REPLACED_RECOGNIZERS = ("UrlRecognizer",)
# libphonenumber regions for presidio's PhoneRecognizer, whose default list lacks Spain, Italy, the Netherlands and
# Ireland (and carries Israel, India and Brazil, each another pass over the text)
PHONE_REGIONS = ("US", "GB", "CA", "IE", "FR", "DE", "ES", "IT", "NL")

__all__ = [
    "BoundedUrlRecognizer",
    "CUSTOM_RECOGNIZERS",
    "EuropeanPhoneRecognizer",
    "EuropeanStreetAddressRecognizer",
    "PHONE_REGIONS",
    "PostalCodeRecognizer",
    "RecordNumberRecognizer",
    "REPLACED_RECOGNIZERS",
    "StreetAddressRecognizer",
]
