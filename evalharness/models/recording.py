"""Recording what the scripted server was asked and what it answered; replaying a recording.

One JSON object per line: the request (path, api, model, headers with secrets redacted,
body) and the reply served (scenario, index, status, the reply as a script entry).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from evalharness.errors import ConfigError
from evalharness.models.script import ModelRequest, Scenario, ScriptSpec

REDACTED = "<redacted>"
_SECRET_HEADERS = {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie"}
_SECRET_WORDS = ("key", "token", "secret", "auth", "password")


def redact_headers(headers: dict[str, str]) -> dict[str, str]:
    """Lower-cased header names; values of credential-like headers replaced by ``<redacted>``."""
    out = {}
    for name, value in headers.items():
        low = name.lower()
        secret = low in _SECRET_HEADERS or any(w in low for w in _SECRET_WORDS)
        out[low] = REDACTED if secret else value
    return out


@dataclass
class RecordedRequest(ModelRequest):
    """A request the server received and what it answered."""

    method: str = "POST"
    time: float = 0.0
    scenario: str | None = None
    reply_index: int | None = None
    status: int = 200
    reply: dict[str, Any] | None = None
    """The reply served, as a script entry (None when no reply was scripted, e.g. an unknown path)."""

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def write_jsonl(records: list[RecordedRequest], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(r.to_json() + "\n" for r in records), encoding="utf-8")
    return path


def read_jsonl(path: str | Path) -> list[RecordedRequest]:
    records = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(RecordedRequest(**json.loads(line)))
        except (json.JSONDecodeError, TypeError) as e:
            raise ConfigError(f"recording {path} line {number} is not a recorded request ({e})") from e
    return records


def replay_spec(path: str | Path) -> ScriptSpec:
    """A script that answers each model's requests with the replies recorded for it, in order.

    Conversations are keyed by model name: two conversations recorded on one model name
    concurrently may be replayed in a different interleaving.
    """
    by_model: dict[str, list[dict[str, Any]]] = {}
    for record in read_jsonl(path):
        if record.reply is not None:
            by_model.setdefault(record.model, []).append(record.reply)
    if not by_model:
        raise ConfigError(f"recording {path} holds no replies to replay")
    scenarios = [Scenario(name=model, model=model, replies=replies) for model, replies in by_model.items()]
    return ScriptSpec(scenarios=scenarios)
