"""Recognizers presidio lacks for care conversations, one a file."""

from .address import StreetAddressRecognizer
from .record_number import RecordNumberRecognizer

CUSTOM_RECOGNIZERS = (StreetAddressRecognizer, RecordNumberRecognizer)

__all__ = ["CUSTOM_RECOGNIZERS", "RecordNumberRecognizer", "StreetAddressRecognizer"]
