"""What defines a run (RunConfig, stored as its snapshot) and the trials it is made of (``matrix``).

Apart from the runner so that an executor's worker on another node can rebuild the same matrix from the
stored configuration without importing the runner.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalharness.errors import ConfigError, UserError
from evalharness.harness.registry import load_harness
from evalharness.packs import Pack
from evalharness.sandbox.base import parse_size
from evalharness.trial import Trial
from evalharness.types import Budget, ModelEndpoint

__all__ = ["RunConfig", "matrix"]


class RunConfig(BaseModel):
    """Everything that defines a run; stored as its snapshot (no secrets: keys are env var names)."""

    model_config = ConfigDict(extra="forbid")
    pack: str
    harnesses: list[str] = Field(min_length=1)
    models: list[ModelEndpoint] = Field(default_factory=list)
    seeds: list[int] = Field(default_factory=lambda: [0])
    workers: int = Field(default=2, gt=0)
    budget: Budget = Field(default_factory=Budget)
    cpus: float = Field(default=1.0, gt=0)
    memory: str = "2g"
    pids: int = Field(default=512, gt=0)
    disk: str = "2g"
    """Size of each sandbox's writable work tree (tmpfs); the root file system is read-only."""
    tmp_disk: str = "1g"
    """Size of each sandbox's /tmp."""
    max_patch_mb: float = Field(default=8.0, gt=0)
    include_invalid: bool = False
    """Run tasks whose validation report (packs validate --run) is not ok; by default they are task errors."""
    """A change larger than this is the outcome patch_too_large."""

    @field_validator("disk", "tmp_disk", "memory")
    @classmethod
    def _a_size(cls, value: str) -> str:
        if parse_size(value) <= 0:  # ValueError names the value and the expected form
            raise ValueError(f"must be more than 0 bytes (got {value!r}; a tmpfs of size 0 would have no limit)")
        return value
    infra_retries: int = Field(default=2, ge=0)
    retry_backoff_s: float = Field(default=2.0, ge=0)
    tasks: list[str] | None = None
    """Restrict the run to these task ids."""
    created_after: str | None = None
    """Only tasks created after this date or time (strict; a date is its whole UTC day: stats/cutoff.py)."""
    created_before: str | None = None
    """Only tasks created before this date or time (strict). Tasks without a created_at are left out by either."""

    @field_validator("created_after", "created_before")
    @classmethod
    def _a_date(cls, value: str | None) -> str | None:
        if value:
            from evalharness.stats.cutoff import parse_when

            try:
                parse_when(value)
            except UserError as e:
                raise ValueError(e.message) from None
        return value



def matrix(pack: Pack, config: RunConfig) -> list[Trial]:
    """The trials of a run: harnesses x models x tasks (filtered by id and date) x seeds, in that order."""
    harnesses = [load_harness(name) for name in config.harnesses]
    names = [h.name for h in harnesses]
    if len(set(names)) != len(names):
        raise ConfigError(f"two harnesses share a name: {names}")
    labels = [m.label for m in config.models]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"a model is given twice: {labels}; give each --model once")
    tasks = pack.tasks
    if config.tasks:
        unknown = sorted(set(config.tasks) - {t.instance_id for t in tasks})
        if unknown:
            raise ConfigError(f"unknown task ids for pack {pack.name}: {', '.join(unknown)}")
        tasks = [t for t in tasks if t.instance_id in set(config.tasks)]
    if config.created_after or config.created_before:
        from evalharness.stats.cutoff import select_created

        kept = set(select_created({t.instance_id: t.created_at for t in tasks}, after=config.created_after,
                                  before=config.created_before).kept)
        tasks = [t for t in tasks if t.instance_id in kept]
        if not tasks:
            raise ConfigError(f"no task of pack {pack.name} was created in the window "
                              f"(after {config.created_after or '-'}, before {config.created_before or '-'})")
    trials = []
    for harness in harnesses:
        models: list[ModelEndpoint | None] = [None]
        if getattr(harness, "uses_model", True):
            if not config.models:
                raise ConfigError(f"harness {harness.name} needs a model: pass --model")
            models = list(config.models)
        covers = getattr(harness, "covers", None)  # optional: the (task, model) pairs it has work for
        for model in models:
            for task in tasks:
                if covers is None or covers(task, model):
                    trials += [Trial(task, harness, model, seed) for seed in config.seeds]
    return trials
