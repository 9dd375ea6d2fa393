"""Keep API keys out of everything a run stores: trajectories, logs, results, test output, the database.

``redact(obj, secrets)`` walks strings, lists and dicts and replaces every secret value, and
every string shaped like a well-known credential (OpenAI/Anthropic ``sk-`` keys, AWS access key
ids, GitHub and Slack tokens, Google API keys, ``Bearer`` tokens), with ``<redacted>``. The
pattern list follows the shapes that secret scanners such as gitleaks and GitHub secret
scanning look for; it is a safety net, the exact values from ``secrets_of`` are the main line.
"""

from __future__ import annotations

import os
import re
from typing import Any

from evalharness.types import ModelEndpoint

REDACTED = "<redacted>"
MIN_SECRET_LENGTH = 8
"""Shorter values are not treated as secrets: replacing 'abc' everywhere would mangle the records."""

KEY_ENV_VARS = (
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AZURE_API_KEY", "AZURE_OPENAI_API_KEY", "GEMINI_API_KEY",
    "GOOGLE_API_KEY", "OPENROUTER_API_KEY", "MISTRAL_API_KEY", "GROQ_API_KEY", "TOGETHER_API_KEY",
    "DEEPSEEK_API_KEY", "XAI_API_KEY", "FIREWORKS_API_KEY", "HF_TOKEN", "HUGGINGFACE_API_KEY",
    "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
)
"""Variables litellm and the provider SDKs read keys from when no api_key_env is given."""

_PATTERNS = [re.compile(p) for p in (
    r"sk-ant-[A-Za-z0-9_\-]{16,}",  # Anthropic
    r"sk-[A-Za-z0-9_\-]{20,}",  # OpenAI (sk-, sk-proj-) and look-alikes
    r"\bAKIA[0-9A-Z]{16}\b",  # AWS access key id
    r"\bgh[pousr]_[A-Za-z0-9]{30,}",  # GitHub tokens
    r"\bgithub_pat_[A-Za-z0-9_]{30,}",
    r"\bxox[abprs]-[A-Za-z0-9\-]{10,}",  # Slack
    r"\bAIza[0-9A-Za-z_\-]{35}",  # Google API key
    r"\bhf_[A-Za-z0-9]{30,}",  # Hugging Face
)]
_BEARER = re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9_\-\.=:+/]{8,}")


def secrets_of(*endpoints: ModelEndpoint | None) -> list[str]:
    """Values (read now) of the key variables of ``endpoints`` and of the providers' default key variables."""
    names = [e.api_key_env for e in endpoints if e is not None and e.api_key_env] + list(KEY_ENV_VARS)
    values = {os.environ.get(name, "") for name in names}
    return sorted((v for v in values if len(v) >= MIN_SECRET_LENGTH), key=len, reverse=True)


def redact_text(text: str, secrets: list[str], *, patterns: bool = True) -> str:
    """``text`` with every secret (longest first) and, if ``patterns``, every key-shaped string replaced."""
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= MIN_SECRET_LENGTH:
            text = text.replace(secret, REDACTED)
    if patterns:
        for pattern in _PATTERNS:
            text = pattern.sub(REDACTED, text)
        text = _BEARER.sub(lambda m: m.group(1) + REDACTED, text)
    return text


def redact(obj: Any, secrets: list[str], *, patterns: bool = True) -> Any:
    """A copy of ``obj`` (str, list, tuple, dict, or anything else kept as is) with secrets replaced.

    Dict keys are redacted too. Other types (numbers, None, booleans) pass through unchanged.
    """
    if isinstance(obj, str):
        return redact_text(obj, secrets, patterns=patterns)
    if isinstance(obj, dict):
        return {redact(k, secrets, patterns=patterns): redact(v, secrets, patterns=patterns) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(redact(v, secrets, patterns=patterns) for v in obj)
    return obj
