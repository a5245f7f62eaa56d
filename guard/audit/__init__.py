"""The audit log (one row per rail decision) and PII redaction."""

from .budget import RedactionBudget
from .redact import Pseudonyms, Redactor, shared_redactor
from .store import AuditLog, conversation_hash

__all__ = ["AuditLog", "Pseudonyms", "RedactionBudget", "Redactor", "conversation_hash", "shared_redactor"]
