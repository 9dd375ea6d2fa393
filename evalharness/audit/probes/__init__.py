"""Audit probes: each has a name, a defect family, a documented rule, and ``run(task, ctx) -> Finding``.

``PROBES`` maps names to probe objects in the order an audit runs them (cheap, pure ones first).
Rules and measured precision and recall: ``docs/audit.md``.
"""

from __future__ import annotations

from typing import Protocol

from evalharness.audit.context import AuditContext
from evalharness.audit.findings import Finding
from evalharness.types import TaskSpec


class Probe(Protocol):
    name: str
    family: str
    rule: str
    """The rule in one paragraph (shown by ``evalharness audit --list-probes`` and in docs/audit.md)."""
    version: int
    """Bumped when the rule changes, so a resumed audit runs the probe again."""
    needs: str
    """``task`` (pure), ``base`` (the code at base), ``runs`` (stored runs), ``predictions`` (agents' predictions),
    ``docker`` or ``model``."""

    # kinds: tuple[str, ...]  (optional) the pack kinds the probe reads ("tasks", "harbor"); without it "tasks"
    # only: the audit says skipped, with the reason, on another kind's task (audit.pipeline.reads)

    def run(self, task: TaskSpec, ctx: AuditContext) -> Finding: ...


PROBES: dict[str, Probe] = {}


def register(probe: Probe) -> Probe:
    if probe.name in PROBES:
        raise ValueError(f"probe {probe.name!r} registered twice")
    PROBES[probe.name] = probe
    return probe


MODULES = ("validity", "harbor", "statement", "environment", "universal", "agents", "mutants")
"""Probe modules, imported (so they register) in the order an audit runs them."""


def load_probes() -> dict[str, Probe]:
    """Every built-in probe, by name, in running order."""
    import importlib
    import importlib.util

    for module in MODULES:
        name = f"evalharness.audit.probes.{module}"
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name)
    return dict(PROBES)
