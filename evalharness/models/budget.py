"""Per-trial budgets: steps, cost, tokens and wall time.

A harness calls ``check_before_call()`` before each model call and ``record(usage)`` after
it. A call is refused once a limit is reached, so a budget is overshot by at most the one
call that crossed it (the same rule as mini-swe-agent's step and cost limits).
"""

from __future__ import annotations

import time
from typing import Callable

from evalharness.errors import BudgetExhausted, HarnessError
from evalharness.types import Budget, Usage


class BudgetTracker:
    """Accumulates Usage over a trial and enforces a Budget. The wall clock starts at construction."""

    def __init__(self, budget: Budget, *, clock: Callable[[], float] = time.monotonic):
        self.budget = budget
        self._clock = clock
        self._started = clock()
        self._usage = Usage(cost_usd=0.0)

    @property
    def usage(self) -> Usage:
        """Totals so far; ``calls`` counts steps, ``cost_usd`` is None once any call's cost was unknown."""
        return self._usage.model_copy()

    @property
    def elapsed_s(self) -> float:
        return self._clock() - self._started

    @property
    def remaining_wall_s(self) -> float | None:
        """Seconds left before max_wall_s (None: no limit); a harness can cap a call's timeout with it."""
        if self.budget.max_wall_s is None:
            return None
        return max(0.0, self.budget.max_wall_s - self.elapsed_s)

    def record(self, usage: Usage) -> None:
        """Add one call's usage (``calls`` counts at least one step)."""
        self._usage = self._usage + usage.model_copy(update={"calls": max(usage.calls, 1)})

    def exhausted(self) -> BudgetExhausted | None:
        """The first limit reached, or None. Raises HarnessError when a cost limit cannot be checked."""
        b, u = self.budget, self._usage
        if b.max_steps is not None and u.calls >= b.max_steps:
            return BudgetExhausted("max_steps", b.max_steps, u.calls)
        if b.max_cost_usd is not None:
            if u.cost_usd is None:
                raise HarnessError(
                    f"cannot enforce max_cost_usd={b.max_cost_usd:g}: the cost of a model call is unknown\n"
                    "  set input_cost_per_token and output_cost_per_token on the model endpoint, or drop max_cost_usd")
            if u.cost_usd >= b.max_cost_usd:
                return BudgetExhausted("max_cost_usd", b.max_cost_usd, u.cost_usd)
        if b.max_tokens is not None and u.total_tokens >= b.max_tokens:
            return BudgetExhausted("max_tokens", b.max_tokens, u.total_tokens)
        elapsed = self.elapsed_s
        if b.max_wall_s is not None and elapsed >= b.max_wall_s:
            return BudgetExhausted("max_wall_s", b.max_wall_s, elapsed)
        return None

    def check_before_call(self) -> None:
        """Raise BudgetExhausted(which, limit, used) when a limit has been reached.

        ``which`` is the Budget field: max_steps, max_cost_usd, max_tokens or max_wall_s.
        """
        reached = self.exhausted()
        if reached is not None:
            raise reached
