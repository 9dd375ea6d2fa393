"""One `drift run` at a time per store.

SQLite: an fcntl lock on a file beside the database (``<db>.drift-lock``) holding the holder's
host and pid; the kernel drops it when the process dies, so a killed run never leaves it stuck.
PostgreSQL: ``pg_try_advisory_lock`` on a connection kept open for the whole run, so two
machines sharing the database cannot run the same day at once; it too ends with the session.
A second run refuses at once (``DriftBusy``, a UserError naming the holder; the CLI exits with
``EXIT_BUSY``, 75, distinct from a configuration error's 1), it never waits.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from pathlib import Path
from typing import Iterator

import sqlalchemy as sa

from evalharness.errors import UserError

__all__ = ["drift_lock", "DriftBusy", "ADVISORY_KEY", "EXIT_BUSY"]

ADVISORY_KEY = 0x45484446  # "EHDF": evalharness drift, one key per database
EXIT_BUSY = 75
"""The exit code of a run refused because another holds the lock (sysexits' EX_TEMPFAIL: try again later)."""
_BUSY_HINT = "one `drift run` at a time per store; this one stops without running anything (cron: the next one will)"


class DriftBusy(UserError):
    """Another `drift run` (or `drift rebaseline`) holds the store's lock: nothing was run."""

    exit_code = EXIT_BUSY


@contextlib.contextmanager
def drift_lock(url: str, engine: sa.Engine | None = None) -> Iterator[None]:
    if url.startswith("sqlite:///"):
        with _file_lock(Path(url.removeprefix("sqlite:///") + ".drift-lock")):
            yield
    elif url.startswith("postgresql") and engine is not None:
        with _advisory_lock(engine):
            yield
    else:
        raise UserError(f"drift run cannot lock the store {url.split('@')[-1]}: use SQLite or PostgreSQL")


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            raise DriftBusy(f"another `drift run` is running on this store ({holder}; lock {path})",
                            _BUSY_HINT) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing drops the lock


@contextlib.contextmanager
def _advisory_lock(engine: sa.Engine) -> Iterator[None]:
    conn = engine.connect()
    try:
        got = conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": ADVISORY_KEY}).scalar()
        conn.commit()
        if not got:
            raise DriftBusy("another `drift run` is running on this database (PostgreSQL advisory lock "
                            f"{ADVISORY_KEY} is held)", _BUSY_HINT)
        try:
            yield
        finally:
            conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": ADVISORY_KEY})
            conn.commit()
    finally:
        conn.close()
