"""Where trials run. The runner hands its trials to an executor and records what comes back; only the driver
(the process running `evalharness run`) writes the store and the run folder, exactly once per trial.

- ``local`` (default): threads on this machine's Docker engine (``threads.py``).
- ``hosts``: threads over several Docker engines, ``--docker-host URL`` each with its worker count (``hosts.py``).
- ``ray``: a Ray cluster, each worker on its own node's engine (``ray.py``).

``work.py`` is what a worker does with one trial, wherever it runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

from evalharness.executors.work import Finished
from evalharness.packs import Pack
from evalharness.runconfig import RunConfig
from evalharness.trial import Trial

__all__ = ["Executor", "ExecutorSpec", "open_executor", "Finished"]


class Executor(Protocol):
    """Runs trials somewhere and hands each result back on the driver's thread."""

    name: str

    def run(self, todo: list[Trial], done: Callable[[Finished], None], stop) -> None:
        """Run every trial of ``todo``; call ``done`` once per trial from the calling thread; return when each has
        a result. On KeyboardInterrupt: set ``stop``, cancel what runs, remove its containers, re-raise."""

    def close(self, run_id: str) -> list[str]:
        """Remove the run's containers on every engine used; return the engines that could not be cleaned."""

    @property
    def images_built(self) -> list[str]:
        """Image tags built during this session, on any engine."""


@dataclass(frozen=True)
class ExecutorSpec:
    """How `evalharness run` was asked to execute (not part of the run's configuration: a resume may run elsewhere)."""

    kind: str = "local"
    """``local``, ``hosts`` or ``ray``."""
    ray_address: str | None = None
    registry: str | None = None
    """Images are pulled from this registry when given (``ray``, ``hosts``), built on each engine otherwise."""
    hosts: tuple[str, ...] = field(default_factory=tuple)
    """``--docker-host`` values, as given (``hosts.parse_host`` reads them)."""


def open_executor(spec: ExecutorSpec, *, run_id: str, pack: Pack, config: RunConfig, resume: bool,
                  ca_bundle: Path | None, log: Callable[[str], None]) -> Executor:
    """Connect to every engine (or the cluster); on a resume first remove what a killed runner left there."""
    if spec.kind == "local":
        from evalharness.executors.threads import Slot, ThreadedExecutor
        from evalharness.executors.work import open_node
        from evalharness.sandbox.docker import remove_labelled
        from evalharness.sandbox.engine import docker_client

        client = docker_client()
        if resume:
            remove_labelled(client, run_id)
        node = open_node(run_id, pack, config, client, ca_bundle=ca_bundle, log=log, registry=spec.registry)
        return ThreadedExecutor([Slot(node, config.workers)], run_id, config, pack.name, log)
    if spec.kind == "hosts":
        from evalharness.executors.hosts import open_hosts

        return open_hosts(spec, run_id=run_id, pack=pack, config=config, resume=resume, ca_bundle=ca_bundle, log=log)
    if spec.kind == "ray":
        from evalharness.executors.ray import open_ray

        return open_ray(spec, run_id=run_id, pack=pack, config=config, resume=resume, ca_bundle=ca_bundle, log=log)
    raise ValueError(f"unknown executor {spec.kind!r}")
