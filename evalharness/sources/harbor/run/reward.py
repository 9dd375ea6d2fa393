"""A Harbor verifier's reward read as data (pure): reward.txt, else reward.json, to an outcome.

A binary reward feeds the existing statistics unchanged (1 ``resolved``, 0 ``unresolved``); a reward between 0
and 1 is ``unresolved`` with its number kept; a named reward set (reward.json) is resolved when every reward is
1. A reward that is missing, malformed, not finite or outside [0, 1], or a verifier that timed out, is the
verifier's outcome ``verifier_error`` with the defect named: never a 0 counted against the agent. Whose defect it
is, the verifier run once more on the task's own state tells (``attribute``): if it gives a valid reward there,
the agent's final state broke the verifier (``unresolved``, or ``tests_timed_out`` for a time-out: the agent's, as
a hanging test is in graded runs); if it fails there too, the task's verifier is at fault (``verifier_error``).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from evalharness.types import Outcome

MISSING, MALFORMED, NOT_FINITE, OUT_OF_RANGE, TIMED_OUT = ("reward_missing", "reward_malformed", "reward_not_finite",
                                                           "reward_out_of_range", "verifier_timed_out")


NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(nan|inf|infinity)", re.ASCII | re.IGNORECASE)
"""A number as written in a reward file: ASCII digits, no ``_`` (``float`` alone reads ``0_1`` as 1 and other
scripts' digits as digits)."""


@dataclass(frozen=True)
class Reward:
    outcome: Outcome
    reason: str
    reward: float | None = None
    """The one number (reward.txt, or reward.json's mean); None when there is none."""
    rewards: dict[str, float] = field(default_factory=dict)
    """reward.json's named rewards (empty for reward.txt)."""
    defect: str | None = None
    """What is wrong with the verifier's answer (one of the constants above), else None."""

    def to_dict(self) -> dict[str, Any]:
        return {"reward": self.reward, "rewards": self.rewards, "defect": self.defect}


def reward_from_dict(data: dict[str, Any]) -> Reward:
    """A Reward stored with its outcome and reason (``own_state`` in a trial's result.json) read back."""
    return Reward(Outcome(data["outcome"]), data.get("reason", ""), data.get("reward"), dict(data.get("rewards") or {}),
                  data.get("defect"))


def _error(defect: str, reason: str) -> Reward:
    return Reward(Outcome.VERIFIER_ERROR, f"{defect}: {reason}", defect=defect)


def _number(value: Any, where: str) -> float | Reward:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return _error(MALFORMED, f"{where} is {value!r}, not a number")
    if isinstance(value, str) and not NUMBER.fullmatch(value.strip()):
        return _error(MALFORMED, f"{where} is {value[:80]!r}, not a number")
    try:
        number = float(value)
    except OverflowError:  # an integer past the floats (JSON allows any length)
        return _error(OUT_OF_RANGE, f"{where} is an integer of {len(str(value))} digits, outside [0, 1]")
    if not math.isfinite(number):
        return _error(NOT_FINITE, f"{where} is {number}")
    if not 0.0 <= number <= 1.0:
        return _error(OUT_OF_RANGE, f"{where} is {number:g}, outside [0, 1]")
    return number


def _verdict(value: float, what: str, rewards: dict[str, float] | None = None) -> Reward:
    rewards = rewards or {}
    if value == 1.0:
        return Reward(Outcome.RESOLVED, f"{what} = 1", value, rewards)
    kind = "0" if value == 0.0 else f"{value:g} (partial)"
    return Reward(Outcome.UNRESOLVED, f"{what} = {kind}", value, rewards)


def parse_reward(txt: bytes | None, js: bytes | None, *, timed_out: bool = False) -> Reward:
    """Pure: the verifier's reward files (None where absent) to a Reward; reward.txt wins when both exist."""
    if timed_out:
        return _error(TIMED_OUT, "the verifier did not finish within its timeout")
    if txt is not None:
        text = txt.decode("utf-8", "replace").strip()
        if not text:
            return _error(MALFORMED, "reward.txt is empty")
        found = _number(text, "reward.txt")
        return found if isinstance(found, Reward) else _verdict(found, "reward.txt")
    if js is None:
        return _error(MISSING, "the verifier wrote neither reward.txt nor reward.json")
    try:
        data = json.loads(js.decode("utf-8", "replace"))
    except json.JSONDecodeError as e:
        return _error(MALFORMED, f"reward.json is not JSON ({e.msg})")
    if not isinstance(data, dict) or not data:
        return _error(MALFORMED, "reward.json is not an object of named rewards")
    rewards: dict[str, float] = {}
    for name, value in data.items():
        found = _number(value, f"reward.json {name}")
        if isinstance(found, Reward):
            return found
        rewards[str(name)] = found
    if all(v == 1.0 for v in rewards.values()):
        return Reward(Outcome.RESOLVED, "reward.json: every reward = 1", 1.0, rewards)
    mean = sum(rewards.values()) / len(rewards)
    low = ", ".join(f"{k} = {v:g}" for k, v in rewards.items() if v != 1.0)
    return Reward(Outcome.UNRESOLVED, f"reward.json: {low}", mean, rewards)


def attribute(reward: Reward, probe: Reward | None) -> Reward:
    """Pure: whose failure a defective ``reward`` is, from ``probe``, the same verifier's reward on the task's own
    state (the environment image with no agent change, or the separate verifier image with nothing carried).

    A valid probe reward: the agent's final state broke the verifier (a hang is ``tests_timed_out``, anything else
    ``unresolved``; the defect stays named). A defective probe: the verifier fails without the agent
    (``verifier_error``). ``reward`` without a defect, or no probe, is returned as it is."""
    if reward.defect is None or probe is None:
        return reward
    if probe.defect is not None:
        return Reward(Outcome.VERIFIER_ERROR, f"{reward.reason}; on the task's own state too ({probe.reason})",
                      defect=reward.defect)
    own = f"on the task's own state the verifier gives reward {probe.reward:g}: the agent's final state broke it"
    if reward.defect == TIMED_OUT:
        return Reward(Outcome.TESTS_TIMED_OUT, f"{reward.reason}; {own}", defect=TIMED_OUT)
    return Reward(Outcome.UNRESOLVED, f"{reward.reason}; {own}", defect=reward.defect)
