"""Trials on a Ray cluster: one actor per alive node, each running trials against its own node's Docker engine.

The driver keeps ``workers`` trials in flight per actor (a faster node takes more) and records what comes back,
once. A node that dies gives its in-flight trials back to the queue for the other nodes (``Schedule``, pure); a
late result for a trial already recorded is dropped. Ray is imported only when this executor is opened.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from evalharness.errors import UserError
from evalharness.executors.work import Finished, attempt, describe, lost_output, open_node
from evalharness.packs import Pack
from evalharness.runconfig import RunConfig, matrix
from evalharness.trial import Trial

__all__ = ["Schedule", "RayExecutor", "NodeWorker", "open_ray", "forwarded_env", "node_label"]

DEFAULT_ENGINE = "unix:///var/run/docker.sock"
SPARE_CALLS = 3
"""Actor threads beyond the workers: stop, cleanup and image-list calls get through while every worker is busy."""
WAIT_S = 1.0
LOOPBACK = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""0: Ray keeps 127.0.0.1 as the node address and binds its servers there (its default off Linux)."""
STOP_GRACE_S = 30.0
"""How long an interrupted run waits for the nodes to remove their containers before killing the actors."""


def node_label(ip: str, node_id: str, engine: str) -> str:
    """How a trial's node is named in result.json, the store's progress and the console."""
    return f"ray:{ip}:{node_id[:8]} ({engine})"


def forwarded_env(config: RunConfig, environ: dict[str, str]) -> dict[str, str]:
    """The model API keys a node needs: only the variables the run's models name, and only those set here (pure)."""
    names = sorted({m.api_key_env for m in config.models if m.api_key_env})
    return {name: environ[name] for name in names if name in environ}


@dataclass
class Schedule:
    """Which trial runs where, which result is recorded, what a lost worker gives back (pure: no Ray, no Docker).

    Every trial id is handed out until one result for it has come back; the first result is the one recorded.
    """

    todo: deque[str]
    capacity: dict[str, int]
    """Trials each worker runs at once."""
    remaining: set[str] = field(default_factory=set)
    running: dict[str, set[str]] = field(default_factory=dict)
    lost: dict[str, str] = field(default_factory=dict)
    """Workers given up, with why."""

    @classmethod
    def of(cls, trial_ids: list[str], capacity: dict[str, int]) -> "Schedule":
        return cls(deque(trial_ids), dict(capacity), set(trial_ids), {w: set() for w in capacity})

    @property
    def live(self) -> list[str]:
        return [w for w in self.capacity if w not in self.lost]

    def assign(self) -> list[tuple[str, str]]:
        """(worker, trial id) pairs to start now: each live worker filled up to its capacity, in turn."""
        out: list[tuple[str, str]] = []
        while True:
            free = [w for w in self.live if len(self.running[w]) < self.capacity[w]]
            if not free:
                return out
            for worker in free:
                trial_id = self._next()
                if trial_id is None:
                    return out
                self.running[worker].add(trial_id)
                out.append((worker, trial_id))

    def _next(self) -> str | None:
        while self.todo:
            trial_id = self.todo.popleft()
            if trial_id in self.remaining:  # else recorded meanwhile from an earlier placement
                return trial_id
        return None

    def finished(self, worker: str, trial_id: str) -> bool:
        """A result came back from ``worker``: True when it is the trial's first (the one to record)."""
        self.running.get(worker, set()).discard(trial_id)
        if trial_id not in self.remaining:
            return False
        self.remaining.discard(trial_id)
        return True

    def returned(self, worker: str, trial_id: str) -> None:
        """``worker`` gave ``trial_id`` back without a result (stopped): it goes to the front of the queue."""
        self.running.get(worker, set()).discard(trial_id)
        if trial_id in self.remaining:
            self.todo.appendleft(trial_id)

    def lose(self, worker: str, why: str) -> list[str]:
        """``worker`` is gone: its in-flight trials go back to the front of the queue; returns them."""
        if worker in self.lost:
            return []
        self.lost[worker] = why
        back = sorted(t for t in self.running.pop(worker, set()) if t in self.remaining)
        self.running[worker] = set()
        self.todo.extendleft(reversed(back))
        return back

    def stranded(self) -> list[str]:
        """No live worker is left: the trials without a result, in queue order (each to be recorded as lost)."""
        if self.live:
            return []
        seen, out = set(), []
        for trial_id in [*self.todo, *sorted(t for r in self.running.values() for t in r)]:
            if trial_id in self.remaining and trial_id not in seen:
                seen.add(trial_id)
                out.append(trial_id)
        return out

    @property
    def complete(self) -> bool:
        return not self.remaining


class NodeWorker:
    """What runs in the actor on one node: the node's engine, the pack from the shared path, the rebuilt matrix."""

    def __init__(self, run_id: str, pack_path: str, pack_hash: str, config: dict[str, Any], cwd: str,
                 ca_bundle: bytes | None, ip: str, registry: str | None = None):
        self.ip, self.registry = ip, registry
        self.run_id, self.pack_path, self.pack_hash, self.config_data = run_id, pack_path, pack_hash, config
        self.cwd, self.ca_bundle = cwd, ca_bundle
        self.stop_event = threading.Event()
        self.lines: list[str] = []
        self.lock = threading.Lock()
        self.node: Any = None
        self.trials: dict[str, Trial] = {}
        self.active = 0

    def open(self, resume: bool) -> dict[str, Any]:
        """Connect to this node's engine and load the pack: {"node", "engine"} or {"error", "hint"} (no raise: the
        driver turns it into one UserError naming the node)."""
        import ray

        from evalharness.packs import load_pack
        from evalharness.sandbox.docker import remove_labelled
        from evalharness.sandbox.engine import docker_client

        engine = os.environ.get("DOCKER_HOST") or DEFAULT_ENGINE
        label = node_label(self.ip, ray.get_runtime_context().get_node_id(), engine)
        try:
            if os.path.isdir(self.cwd):  # relative harness files and pack paths resolve as on the driver
                os.chdir(self.cwd)
            if not Path(self.pack_path).exists():
                return {"node": label, "error": f"node {label}: pack {self.pack_path} not found",
                        "hint": "the pack must be on a path every node shares (the same content at the same path)"}
            pack = load_pack(self.pack_path)
            if pack.content_hash != self.pack_hash:
                return {"node": label, "error": f"node {label}: pack {self.pack_path} differs from the driver's "
                        f"(content hash {pack.content_hash[:12]}, the driver's {self.pack_hash[:12]})",
                        "hint": "the pack must be on a path every node shares (the same content at the same path)"}
            config = RunConfig.model_validate(self.config_data)
            client = docker_client()
            if resume:
                remove_labelled(client, self.run_id)
            self.trials = describe(matrix(pack, config), pack.name)
            self.config = config
            self.node = open_node(self.run_id, pack, config, client, ca_bundle=self.ca_bundle, log=self._log,
                                  node=label, engine=engine, registry=self.registry)
        except UserError as e:
            return {"node": label, "error": f"node {label}: {e.message}", "hint": e.hint}
        return {"node": label, "engine": engine}

    def _log(self, line: str) -> None:
        with self.lock:
            self.lines.append(line)

    def run(self, trial_id: str) -> tuple[Finished, list[str]]:
        """One trial on this node's engine; the node's log lines since the last call come along."""
        with self.lock:
            self.active += 1
        try:
            out, attempts = attempt(self.node.ctx, self.config, self.trials[trial_id], self.stop_event,
                                    self.node.checker)
        finally:
            with self.lock:
                self.active -= 1
                lines, self.lines = self.lines, []
        return Finished(trial_id, out, attempts, self.node.node), lines

    def stop(self) -> None:
        self.stop_event.set()

    def clean(self, wait_s: float = 0) -> int:
        """Remove the run's containers on this node's engine; how many. With ``wait_s`` (the run is stopping), wait
        that long for the trials still running to give up, and remove what they created meanwhile."""
        import time

        from evalharness.sandbox.docker import remove_labelled

        if self.node is None:
            return 0
        removed = remove_labelled(self.node.ctx.client, self.run_id)
        deadline = time.monotonic() + wait_s
        while self.active and time.monotonic() < deadline:
            time.sleep(0.2)
            removed += remove_labelled(self.node.ctx.client, self.run_id)
        return removed + (remove_labelled(self.node.ctx.client, self.run_id) if wait_s else 0)

    def built(self) -> list[str]:
        return list(self.node.built) if self.node is not None else []


def _ray():
    try:
        import ray
    except ImportError as e:
        raise UserError("--executor ray needs Ray, which is not installed",
                        "pip install 'evalharness[ray]' (on the driver and on every node)") from e
    return ray


def _loopback(address: str | None) -> bool:
    host = (address or "").split("://")[-1].rsplit(":", 1)[0]
    return host in ("127.0.0.1", "localhost", "::1", "[::1]")


def connect(address: str | None) -> bool:
    """Join the cluster at ``address`` (or RAY_ADDRESS), else start one on 127.0.0.1; True when we started it.

    Ray's own logs never reach stdout (it is the report); usage stats and the dashboard are off. On loopback (a
    local cluster, or a head at 127.0.0.1) Ray is told to keep 127.0.0.1 as this node's address: otherwise it
    rewrites it to the default route's address and its servers listen on every interface.
    """
    address = address or os.environ.get("RAY_ADDRESS") or None
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    if address is None or _loopback(address):
        os.environ[LOOPBACK] = "0"  # read when ray is imported, and by the processes a local cluster starts
    ray = _ray()
    if ray.is_initialized():
        return False
    quiet = {"log_to_driver": False, "logging_level": logging.WARNING, "include_dashboard": False}
    try:
        if address:
            ray.init(address=address, **quiet)
            return False
        ray.init(_node_ip_address="127.0.0.1", **quiet)
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise UserError(f"cannot join the Ray cluster at {address or 'a new local cluster'}: {e}",
                        "start it with `ray start --head` (or pass --ray-address HOST:PORT of its head)") from e
    return True


def open_ray(spec, *, run_id: str, pack: Pack, config: RunConfig, resume: bool, ca_bundle: Path | None,
             log: Callable[[str], None]) -> "RayExecutor":
    """One actor on every alive node, each connected to its node's engine; UserError naming a node that cannot."""
    started = connect(spec.ray_address)
    ray = _ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    nodes = [n for n in ray.nodes() if n.get("Alive")]
    if ca_bundle is None:
        from evalharness.sandbox.images import HOST_CA_BUNDLE

        ca_bundle = HOST_CA_BUNDLE if HOST_CA_BUNDLE.is_file() else None
    bundle = ca_bundle.read_bytes() if ca_bundle is not None else None
    env = forwarded_env(config, dict(os.environ))
    remote = ray.remote(NodeWorker)
    actors = {}
    for n in nodes:
        options: dict[str, Any] = {
            "num_cpus": 0, "max_concurrency": config.workers + SPARE_CALLS, "max_restarts": 0,
            "scheduling_strategy": NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)}
        if env:
            options["runtime_env"] = {"env_vars": env}
        actors[n["NodeID"]] = remote.options(**options).remote(
            run_id, str(pack.root), pack.content_hash, config.model_dump(mode="json"), os.getcwd(), bundle,
            n["NodeManagerAddress"], spec.registry)
    executor = RayExecutor(actors, run_id, config, pack.name, log, started)
    try:
        executor.open(resume)
    except BaseException:
        executor.shutdown()
        raise
    return executor


class RayExecutor:
    """Runs trials on the cluster's nodes; ``run`` hands each result to ``done`` on the driver's thread."""

    name = "ray"

    def __init__(self, actors: dict[str, Any], run_id: str, config: RunConfig, pack_name: str,
                 log: Callable[[str], None], started: bool):
        self.actors, self.run_id, self.config, self.pack_name, self.log = actors, run_id, config, pack_name, log
        self.started = started
        self.labels: dict[str, str] = {}
        self.engines: dict[str, str] = {}
        self.lost_engines: dict[str, str] = {}
        """Engine URL by label of the nodes lost during the run: the driver cleans them itself at close."""
        self.built: dict[str, list[str]] = {}
        self.closed = False

    def open(self, resume: bool) -> None:
        import ray

        refs = {key: actor.open.remote(resume) for key, actor in self.actors.items()}
        errors = []
        for key, ref in refs.items():
            info = ray.get(ref)
            if "error" in info:
                errors.append(info)
                continue
            self.labels[key], self.engines[key] = info["node"], info["engine"]
        if errors:
            raise UserError("; ".join(e["error"] for e in errors), errors[0].get("hint"))
        if not self.actors:
            raise UserError("the Ray cluster has no alive node", "start one with `ray start`")
        self.log(f"ray: {len(self.actors)} node(s): " + ", ".join(self.labels.values()))

    @property
    def images_built(self) -> list[str]:
        """The tags each node built (a tag built on two nodes counts twice: two builds)."""
        return [tag for tags in self.built.values() for tag in tags]

    def run(self, todo: list[Trial], done: Callable[[Finished], None], stop: threading.Event) -> None:
        import ray

        by_id = describe(todo, self.pack_name)
        plan = Schedule.of(list(by_id), {key: self.config.workers for key in self.actors})
        flight: dict[Any, tuple[str, str]] = {}
        try:
            while not plan.complete:
                for key, trial_id in plan.assign():
                    flight[self.actors[key].run.remote(trial_id)] = (key, trial_id)
                if not flight:  # every node lost: the rest are infrastructure failures, never the agent's
                    why = "; ".join(plan.lost.values()) or "no Ray node left"
                    for trial_id in plan.stranded():
                        plan.finished("", trial_id)
                        done(Finished(trial_id, lost_output(by_id[trial_id], f"not run: {why}", 0), 0, "none"))
                    return
                ready, _ = ray.wait(list(flight), num_returns=1, timeout=WAIT_S)
                for ref in ready:
                    self._collect(ref, flight, plan, done)
        except BaseException:
            stop.set()
            self._interrupt(list(flight))
            raise
        finally:
            self._fetch_built()

    def _collect(self, ref, flight: dict, plan: Schedule, done: Callable[[Finished], None]) -> None:
        import ray
        from ray.exceptions import ActorUnavailableError, NodeDiedError, ObjectLostError, RayActorError

        key, trial_id = flight.pop(ref)
        try:
            finished, lines = ray.get(ref)
        except (RayActorError, ActorUnavailableError, NodeDiedError, ObjectLostError) as e:
            self._lose(key, f"{type(e).__name__}", flight, plan)
            return
        for line in lines:
            self.log(f"{self.labels.get(key, key)}: {line}")
        if finished.out is None:
            plan.returned(key, trial_id)
        elif plan.finished(key, trial_id):
            done(finished)
        else:
            self.log(f"second result of {trial_id} from {finished.node} ignored")

    def _lose(self, key: str, why: str, flight: dict, plan: Schedule) -> None:
        """A node is gone: its trials go to the others; its engine is remembered for the cleanup at close."""
        label = self.labels.get(key, key)
        back = plan.lose(key, f"node {label} lost ({why})")
        for ref in [r for r, (k, _) in flight.items() if k == key]:
            del flight[ref]
        if key in self.engines:
            self.lost_engines[label] = self.engines[key]
        if back or why:
            self.log(f"node {label} lost ({why}): {len(back)} trial(s) go to the other nodes")

    def _interrupt(self, refs: list) -> None:
        """Ctrl-C: every node stops, what runs is cancelled, every node removes the run's containers."""
        import ray

        for actor in self.actors.values():
            actor.stop.remote()
        self._clean_nodes(wait_s=STOP_GRACE_S)
        for ref in refs:
            try:
                ray.cancel(ref)  # force is refused for actor tasks: ray.kill at close ends the actor itself
            except Exception:  # noqa: BLE001 - already finished or its node is gone
                pass

    def _clean_nodes(self, wait_s: float = 0) -> list[str]:
        """Each live actor removes the run's containers on its engine; returns the labels that did not answer."""
        import ray

        refs = {key: actor.clean.remote(wait_s) for key, actor in self.actors.items()
                if self.labels.get(key) not in self.lost_engines}
        failed = []
        for key, ref in refs.items():
            try:
                ray.get(ref, timeout=wait_s + STOP_GRACE_S)
            except Exception as e:  # noqa: BLE001 - a node that does not answer is cleaned by URL below
                failed.append(key)
                if key in self.engines:
                    self.lost_engines.setdefault(self.labels[key], self.engines[key])
                self.log(f"node {self.labels.get(key, key)} did not clean up ({type(e).__name__})")
        return failed

    def _fetch_built(self) -> None:
        import ray

        for key, actor in self.actors.items():
            if self.labels.get(key) in self.lost_engines:
                continue
            try:
                self.built[self.labels[key]] = ray.get(actor.built.remote(), timeout=10)
            except Exception:  # noqa: BLE001 - a lost node's builds are not known
                pass

    def close(self, run_id: str) -> list[str]:
        """Remove the run's containers on every node, end the actors (and the local cluster this run started), then
        remove from here what is left on every engine the driver reaches (a lost node's above all); return the
        engines that could not be cleaned."""
        if self.closed:
            return []
        self.closed = True
        self._clean_nodes()
        self.shutdown()
        unclean = []
        for key, url in sorted(self.engines.items()):
            label = self.labels[key]
            why = clean_engine(url, run_id)
            if why and label in self.lost_engines:  # a live node cleaned itself above
                unclean.append(f"{label} ({why})")
        return unclean

    def shutdown(self) -> None:
        import ray

        for actor in self.actors.values():
            try:
                ray.kill(actor)
            except Exception:  # noqa: BLE001 - already dead
                pass
        ray.shutdown()  # ends the local cluster this run started; only disconnects from a cluster it joined


def clean_engine(url: str, run_id: str) -> str | None:
    """Remove the run's containers on the engine at ``url`` from the driver: None when done, else why not."""
    import docker

    from evalharness.sandbox.docker import remove_labelled

    if url.startswith("unix://") and not Path(url[len("unix://"):]).exists():
        return "its socket is not on this machine"
    if not url.startswith(("unix://", "tcp://")):
        return "not reachable from the driver"
    try:
        remove_labelled(docker.DockerClient(base_url=url, timeout=20), run_id)
    except Exception as e:  # noqa: BLE001 - an engine that is gone cannot be cleaned now
        return f"{type(e).__name__}"
    return None
