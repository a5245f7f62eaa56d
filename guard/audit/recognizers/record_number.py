"""Medical and case record numbers ("MRN 00123456", "patient ID: AB-4471"), which often follow a keyword."""

from presidio_analyzer import Pattern, PatternRecognizer


class RecordNumberRecognizer(PatternRecognizer):
    PATTERNS = [
        Pattern(
            "keyword then id",
            r"(?i)\b(?:MRN|medical record(?: number| no\.?| #)?|record (?:number|no\.?|#)|patient id|case (?:number|no\.?|#)"
            r"|NHS (?:number|no\.?))\s*[:#]?\s*[A-Z0-9][A-Z0-9-]{3,}\b",
            0.7,
        ),
    ]

    def __init__(self) -> None:
        super().__init__(supported_entity="RECORD_NUMBER", patterns=self.PATTERNS, name="RecordNumberRecognizer")
