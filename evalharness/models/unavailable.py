"""When a trial's model failure is the endpoint's (outcome ``model_unavailable``, infrastructure) and not the agent's.

Pure functions. The endpoint is unavailable when the trial ended because its model calls failed for good with
a failure of the endpoint, not of the request (``failures.RETRYABLE_KINDS``): it could not be reached
(``connection``), did not answer in time (``timeout``), answered 5xx (``server``) or kept answering 429
(``rate_limit``). Auth (401/403), not-found, bad-request and context-window failures stay harness errors: the
configuration's fault, or the agent's.

- Host-side harnesses (``minimal``, ``mini-swe-agent``): the ModelClient raised a ModelAPIError of such a kind
  after its retries (``from_error``).
- Relay harnesses (``command``): the relay's ledger holds each model call with its status and where the status
  came from (``source``: ``endpoint`` when the endpoint answered, ``relay`` when the relay got no answer; the
  transport error's name in ``relay_error``). A call counts only when the endpoint answered 429/5xx, or the
  relay failed to *reach* it or to read its answer to the end (``REACH_ERRORS``). Statuses the relay makes
  itself (403 for a refused path, 400 for a budget refusal, a request it could not send) never reach the
  ledger as endpoint failures, so an agent cannot turn its failure into an excluded trial by provoking them
  (docs/threat-model.md). Rule
  (``from_relay_calls``): the calls at the end of the trial that failed that way, in a row, make it
  unavailable when either every call of the trial failed that way (the model never answered once), or the
  agent did not end well (non-zero exit or timeout) and its last call failed that way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from evalharness.models.failures import RETRYABLE_KINDS, ModelAPIError

MODEL_UNAVAILABLE = "model_unavailable"
"""The ``exit_status`` of an AgentResult whose harness ended because the endpoint was unavailable."""

REACH_ERRORS = {
    "ConnectError": "connection", "ConnectTimeout": "timeout", "ReadTimeout": "timeout", "WriteTimeout": "timeout",
    "ReadError": "connection", "WriteError": "connection", "RemoteProtocolError": "connection",
}
"""httpx errors (by name) that mean the relay could not reach the endpoint or get its answer. Others (a request
httpx refuses to send, the relay's own connection pool full of the agent's calls) are the request's doing."""

_LABELS = {"connection": "connection failed", "timeout": "timed out", "rate_limit": "rate limited",
           "server": "server error"}


@dataclass(frozen=True)
class Unavailable:
    """What made the endpoint unavailable: the last failure's kind and status, where, after how many attempts."""

    kind: str
    status: int | None
    where: str
    attempts: int
    detail: str = ""

    @property
    def reason(self) -> str:
        """The trial's reason: 'model endpoint unavailable: 503 server error from URL after 3 attempts'."""
        label = _LABELS.get(self.kind, self.kind)
        what = f"{self.status} {label}" if self.status is not None else label
        plural = "s" if self.attempts != 1 else ""
        head = f"model endpoint unavailable: {what} from {self.where or 'the endpoint'} after {self.attempts} attempt{plural}"
        return f"{head}\n  {self.detail}" if self.detail else head


def from_error(error: BaseException) -> Unavailable | None:
    """The unavailability a host-side harness ended with (a ModelAPIError of an endpoint kind), else None."""
    if not isinstance(error, ModelAPIError) or error.kind not in RETRYABLE_KINDS:
        return None
    first = str(error).splitlines()[0] if str(error) else ""
    return Unavailable(error.kind, error.status, error.where, error.attempts, first[:400])


def call_failure(call: dict[str, Any]) -> str | None:
    """The endpoint failure kind of one relayed call (a ledger entry), or None: it succeeded, or failed
    for a reason that is not the endpoint's (a 4xx other than 429, a request the relay could not send)."""
    status, cut = call.get("status"), REACH_ERRORS.get(str(call.get("relay_error") or ""))
    if call.get("source", "endpoint") == "relay":
        return cut
    if not isinstance(status, int) or status < 400:
        return cut  # an answer the endpoint cut off (the stream dropped) is no answer
    if status == 429:
        return "rate_limit"
    return "server" if status >= 500 else None


def from_relay_calls(calls: Iterable[dict[str, Any]], where: str, *, ended_well: bool) -> Unavailable | None:
    """The unavailability a relay harness's trial ended with, by the rule of the module docstring, else None.

    ``calls`` are the ledger's model calls in order; ``ended_well`` is True when the agent exited 0 in time.
    """
    calls = list(calls)
    failed = 0
    for call in reversed(calls):
        if call_failure(call) is None:
            break
        failed += 1
    if failed == 0 or (ended_well and failed < len(calls)):
        return None
    last = calls[-1]
    kind = call_failure(last) or "server"
    status = last.get("status") if kind in ("rate_limit", "server") else None
    detail = ""
    if status is None:
        got = "no answer" if last.get("source", "endpoint") == "relay" else "an answer cut off"
        detail = f"the relay got {got}: {last.get('relay_error')}"
    return Unavailable(kind, status, where, failed, detail)


__all__ = ["MODEL_UNAVAILABLE", "REACH_ERRORS", "Unavailable", "call_failure", "from_error", "from_relay_calls"]
