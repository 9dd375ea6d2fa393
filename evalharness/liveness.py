"""Is a run's runner alive? A killed runner (SIGKILL, power loss) cannot mark its run as interrupted.

A running run records its runner's host and pid and refreshes a heartbeat every
``HEARTBEAT_S`` seconds. Its stored status ``running`` is believed only while the runner
looks alive: on this host, its pid exists and is not a zombie, and everywhere, its heartbeat is
younger than ``STALE_AFTER_S``. A run with no runner recorded (a database older than these
columns) is not believed either. ``run_status`` is the pure decision; ``pid_alive`` asks the OS.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

HEARTBEAT_S = 10.0
"""How often a runner refreshes its run's heartbeat."""
STALE_AFTER_S = 300.0
"""A heartbeat older than this means the runner is gone, whatever host it ran on."""


def this_host() -> str:
    return platform.node()


def pid_alive(pid: int) -> bool:
    """True when a process ``pid`` exists on this host and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        pass
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def runner_alive(host: str | None, pid: int | None, heartbeat: datetime | None, *, now: datetime, here: str,
                 alive: Callable[[int], bool]) -> bool:
    """The decision: is the runner recorded as (host, pid, heartbeat) alive at ``now``, seen from host ``here``?"""
    if pid is None or heartbeat is None:
        return False
    if heartbeat.tzinfo is None:
        heartbeat = heartbeat.replace(tzinfo=timezone.utc)
    if now - heartbeat > timedelta(seconds=STALE_AFTER_S):
        return False
    return alive(pid) if host == here else True


def run_status(row: dict, *, now: datetime | None = None, here: str | None = None,
               alive: Callable[[int], bool] = pid_alive) -> str:
    """The status to show for a stored run: ``interrupted`` for a ``running`` run whose runner is gone."""
    if row.get("status") != "running":
        return str(row.get("status"))
    live = runner_alive(row.get("runner_host"), row.get("runner_pid"), row.get("heartbeat_at"),
                        now=now or datetime.now(timezone.utc), here=here or this_host(), alive=alive)
    return "running" if live else "interrupted"


def collectable_runs(labelled: set[str], stored: dict[str, dict], *, now: datetime | None = None,
                     here: str | None = None, alive: Callable[[int], bool] = pid_alive
                     ) -> tuple[set[str], set[str], set[str]]:
    """Split the run ids found on containers into (runner gone: collect, live: keep, not in the store: keep)."""
    unknown = {r for r in labelled if r not in stored}
    live = {r for r in labelled - unknown if run_status(stored[r], now=now, here=here, alive=alive) == "running"}
    return labelled - unknown - live, live, unknown
