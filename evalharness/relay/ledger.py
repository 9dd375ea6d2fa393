"""What passed through a relay: one entry per model call, usage and cost summed, budgets enforced.

Cost follows evalharness.models.client: the endpoint's own prices when both are set, else
litellm's bundled price map (``litellm.cost_per_token``, offline), else unknown (None).
Budgets follow evalharness.models.budget: a call is refused once a limit is reached, so a
budget is overshot by at most the call that crossed it. That holds for calls sent in parallel too:
an admitted call holds a place until it is recorded. Under a cost or token limit only one call is
in flight at a time (a call's spend is known only once it ends); under a step limit alone calls
overlap as long as recorded plus in-flight calls stay below it. A call that may not start yet waits.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timezone
from typing import Any

from evalharness.errors import BudgetExhausted, HarnessError
from evalharness.models import BudgetTracker
from evalharness.relay.wire import CallSummary
from evalharness.types import Budget, ModelEndpoint, Usage

log = logging.getLogger(__name__)


class Ledger:
    """Thread-safe record of relayed calls. ``exhausted`` holds the BudgetExhausted that refused a call."""

    def __init__(self, endpoint: ModelEndpoint, budget: Budget | None = None):
        self.endpoint = endpoint
        self._tracker = BudgetTracker(budget.model_copy(update={"max_wall_s": None}) if budget else Budget())
        self._lock = threading.Lock()
        self._turn = threading.Condition(self._lock)
        self._in_flight = 0
        self._closed = False
        self.calls: list[dict[str, Any]] = []
        self.refused: list[dict[str, Any]] = []
        self.exhausted: BudgetExhausted | None = None
        self.error: HarnessError | None = None

    @property
    def usage(self) -> Usage:
        with self._lock:
            return self._tracker.usage

    def admit(self, path: str) -> str | None:
        """None when a model call may go ahead (it then holds a place until ``record``); else why it is refused.

        Waits while the call may not start yet (see the module docstring).
        """
        with self._turn:
            while True:
                refusal = self._refusal(path)
                if refusal is not None:
                    return refusal
                if self._may_start():
                    self._in_flight += 1
                    return None
                self._turn.wait()

    def close(self) -> None:
        """Refuse every later call (the relay is stopping); calls still in flight are recorded as usual."""
        with self._turn:
            self._closed = True
            self._turn.notify_all()

    def _refusal(self, path: str) -> str | None:
        if self._closed:
            return "the relay has stopped"
        try:
            reached = self._tracker.exhausted()
        except HarnessError as e:  # a cost limit with an unknown cost
            self.error = e
            return str(e).splitlines()[0]
        if reached is None:
            return None
        self.exhausted = self.exhausted or reached
        self.refused.append({"path": path, "time": _iso(time.time()), "reason": str(reached)})
        return str(reached)

    def _may_start(self) -> bool:
        if self._in_flight == 0:
            return True
        budget = self._tracker.budget
        if budget.max_cost_usd is not None or budget.max_tokens is not None:
            return False
        return budget.max_steps is None or self._tracker.usage.calls + self._in_flight < budget.max_steps

    def record(self, path: str, started: float, duration: float, status: int, summary: CallSummary,
               messages_in: int, *, answered: bool = True, relay_error: str | None = None) -> None:
        """Record an admitted call (failed or not) and give its place back.

        ``answered`` False: the endpoint never answered, ``status`` is the relay's own 502 and the entry's
        ``source`` is ``relay``; else ``endpoint`` (the status is the endpoint's). ``relay_error`` names the
        exception that ended the exchange, if one did (before the answer, or cutting the reply off).
        """
        usage = Usage(input_tokens=summary.input_tokens, output_tokens=summary.output_tokens,
                      cached_tokens=summary.cached_tokens, cache_read_tokens=summary.cached_tokens,
                      cache_write_tokens=summary.cache_write_tokens, calls=1, latency_s=duration)
        failed = status >= 400  # an error reply is kept in the trajectory but is not a step of the budget
        usage.cost_usd = 0.0 if failed else self._cost(summary)
        if failed:
            usage.calls = 0
        step = {"t_start": _iso(started), "duration_s": round(duration, 3), "kind": "model", "path": path,
                "status": status, "model": summary.model, "messages_in": messages_in, "content": summary.content,
                "tool_calls": summary.tool_calls, "usage": usage.model_dump(),
                "source": "endpoint" if answered else "relay"}
        if relay_error is not None:
            step["relay_error"] = relay_error
        with self._turn:
            self._in_flight = max(0, self._in_flight - 1)
            if not failed:
                self._tracker.record(usage)
            self.calls.append(step)
            self._turn.notify_all()

    def _cost(self, s: CallSummary) -> float | None:
        ep = self.endpoint
        if not s.usage_found:
            return None
        if ep.input_cost_per_token is not None and ep.output_cost_per_token is not None:
            return s.input_tokens * ep.input_cost_per_token + s.output_tokens * ep.output_cost_per_token
        return _litellm_cost(_priced_name(ep.name, s.model), s)


def _priced_name(endpoint_name: str, wire_model: str) -> str:
    """The model the reply names, with the endpoint's provider prefix (an agent may call a second model)."""
    provider, _, _ = endpoint_name.rpartition("/")
    if not wire_model:
        return endpoint_name
    return f"{provider}/{wire_model}" if provider and "/" not in wire_model else wire_model


def _litellm_cost(model: str, s: CallSummary) -> float | None:
    from evalharness.models import load_litellm

    try:
        prompt, completion = load_litellm().cost_per_token(
            model=model, prompt_tokens=s.input_tokens, completion_tokens=s.output_tokens,
            cache_read_input_tokens=s.cached_tokens, cache_creation_input_tokens=s.cache_write_tokens)
    except Exception as e:  # litellm raises several unrelated types for "not in the price map"
        log.debug("no price for %s (%s): cost unknown", model, e)
        return None
    return float(prompt) + float(completion)


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat()
