"""Import litellm lazily and offline.

litellm takes ~3 s to import and, unless told otherwise, fetches its price map (and, on
Anthropic calls, a beta-header list) from the internet. ``LITELLM_OFFLINE_MODE=true`` stops
every such fetch (checked by tests/models/test_client_contacts_only_endpoint.py). A user's
explicit setting of these variables is kept; ``LITELLM_OFFLINE_MODE=false`` opts back in.
"""

from __future__ import annotations

import os
import sys
import threading
from types import ModuleType

_OFFLINE_DEFAULTS = {"LITELLM_OFFLINE_MODE": "true", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
_lock = threading.Lock()


def load_litellm() -> ModuleType:
    """Return the litellm module, imported offline on first use."""
    with _lock:
        if "litellm" not in sys.modules:
            for name, value in _OFFLINE_DEFAULTS.items():
                os.environ.setdefault(name, value)
        bypass_proxy_for_loopback()
        import litellm

        litellm.suppress_debug_info = True
        return litellm


def bypass_proxy_for_loopback() -> None:
    """Add loopback hosts to ``NO_PROXY``/``no_proxy`` so a proxy never sees calls to a local server."""
    for name in ("NO_PROXY", "no_proxy"):
        current = [h.strip() for h in os.environ.get(name, "").split(",") if h.strip()]
        missing = [h for h in _LOOPBACK if h not in current]
        if missing:
            os.environ[name] = ",".join(current + missing)
