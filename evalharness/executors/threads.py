"""Threads in the driver process, each bound to one Docker engine: the local engine (the default executor)
or several engines given by ``--docker-host`` with a worker count each.

Every worker thread takes the next trial from one shared queue, so a fast engine takes more. An engine
that stops answering is lost: the trial it was running goes back to the queue for the other engines
(never recorded twice: only the driver records, from the results queue), and its threads stop. When no
engine is left, the trials not yet run are recorded as infrastructure failures, which a resume retries.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field
from typing import Callable

from evalharness.executors.work import Finished, NodeContext, attempt, lost_output
from evalharness.runconfig import RunConfig
from evalharness.sandbox.docker import remove_labelled
from evalharness.trial import Trial
from evalharness.types import Outcome

__all__ = ["Slot", "ThreadedExecutor"]

_INFRA = {Outcome.SANDBOX_ERROR, Outcome.INFRA_ERROR}


@dataclass
class Slot:
    """One engine and how many trials it runs at once."""

    node: NodeContext
    workers: int
    lost: str | None = None
    """Why the engine was given up (None while it answers)."""
    ran: int = field(default=0)


PING_TIMEOUT_S = 10.0
"""How long a lost-engine check waits: a machine gone silent must not hold its trial for the client's 900 s."""


def _answers(node: NodeContext) -> bool:
    try:
        api = node.ctx.client.api
        return api._result(api._get(api._url("/_ping"), timeout=PING_TIMEOUT_S)) == "OK"
    except Exception:  # noqa: BLE001 - any failure to answer is the engine being gone
        return False


class ThreadedExecutor:
    """Runs trials on threads over one or more engines; ``run`` hands each result to ``done`` on the caller's thread."""

    name = "threads"

    def __init__(self, slots: list[Slot], run_id: str, config: RunConfig, pack_name: str, log: Callable[[str], None]):
        self.slots, self.run_id, self.config, self.pack_name, self.log = slots, run_id, config, pack_name, log
        self._threads: list[threading.Thread] = []

    @property
    def images_built(self) -> list[str]:
        return [tag for slot in self.slots for tag in slot.node.built]

    def run(self, todo: list[Trial], done: Callable[[Finished], None], stop: threading.Event) -> None:
        work: queue.Queue[Trial] = queue.Queue()
        for trial in todo:
            work.put(trial)
        results: queue.Queue[Finished | BaseException] = queue.Queue()
        remaining = {t.trial_id(self.pack_name) for t in todo}
        lock, finished = threading.Lock(), threading.Event()

        def worker(slot: Slot) -> None:
            while not stop.is_set() and slot.lost is None and not finished.is_set():
                try:  # a trial another engine gave back may still come: wait until the driver has every result
                    trial = work.get(timeout=0.2)
                except queue.Empty:
                    continue
                try:
                    out, attempts = attempt(slot.node.ctx, self.config, trial, stop, slot.node.checker)
                except BaseException as e:  # noqa: BLE001 - handed to the driver, which raises it
                    results.put(e)
                    return
                if out is not None and out.outcome in _INFRA and len(self.slots) > 1 and not _answers(slot.node):
                    with lock:
                        if slot.lost is None:
                            slot.lost = f"engine {slot.node.node} stopped answering"
                            self.log(f"{slot.lost}: its trials go to the other engines")
                    work.put(trial)  # rescheduled: this attempt is not recorded
                    return
                slot.ran += out is not None
                results.put(Finished(trial.trial_id(self.pack_name), out, attempts, slot.node.node))

        self._threads = [threading.Thread(target=worker, args=(slot,), name=f"eh-trial-{i}-{n}", daemon=True)
                         for i, slot in enumerate(self.slots) for n in range(slot.workers)]
        for thread in self._threads:
            thread.start()
        try:
            while remaining:
                try:
                    item = results.get(timeout=0.5)
                except queue.Empty:
                    if not any(t.is_alive() for t in self._threads):
                        if stop.is_set():  # stopping: what was not run stays unrecorded, a resume runs it
                            return
                        self._strand(work, remaining, results)
                        if results.empty():
                            return
                    continue
                if isinstance(item, BaseException):
                    raise item
                if item.trial_id in remaining:  # a second result for one trial is never recorded
                    remaining.discard(item.trial_id)
                    done(item)
        except BaseException:
            stop.set()
            self.close(self.run_id)  # containers gone first, so the threads' engine calls end at once
            raise
        finally:
            finished.set()
            for thread in self._threads:
                thread.join(timeout=60)

    def _strand(self, work: queue.Queue, remaining: set[str], results: queue.Queue) -> None:
        """No thread is left (every engine lost): what was not run ends as an infrastructure failure."""
        why = "; ".join(s.lost for s in self.slots if s.lost) or "no engine left"
        while True:
            try:
                trial = work.get_nowait()
            except queue.Empty:
                break
            trial_id = trial.trial_id(self.pack_name)
            if trial_id in remaining:
                results.put(Finished(trial_id, lost_output(trial, f"not run: {why}", 0), 0, "none"))

    def close(self, run_id: str) -> list[str]:
        """Remove the run's containers on every engine; return the engines that could not be cleaned."""
        unclean = []
        for slot in self.slots:
            if slot.lost is not None and not _answers(slot.node):  # still gone: do not wait 900 s on it
                unclean.append(f"{slot.node.node} (not answering)")
                continue
            try:
                remove_labelled(slot.node.ctx.client, run_id)
            except Exception as e:  # noqa: BLE001 - an engine that is gone cannot be cleaned now
                unclean.append(f"{slot.node.node} ({type(e).__name__})")
        return unclean
