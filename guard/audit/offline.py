"""Keep presidio's helpers off the network: tldextract would download the public suffix list on first use."""

from __future__ import annotations

import tldextract
import tldextract.tldextract as _impl

_configured = False


def configure_tldextract() -> None:
    """Swap tldextract's module-wide extractor for one that reads only its bundled snapshot.

    presidio's email recognizer calls `tldextract.extract`, which looks the module global up on every call, so
    replacing it once covers every caller. No cache dir: nothing is written either.
    """
    global _configured
    if not _configured:
        _impl.TLD_EXTRACTOR = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None, fallback_to_snapshot=True)
        _configured = True
