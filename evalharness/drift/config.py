"""drift.yaml -> a checked DriftConfig: which streams exist and how each is run, sampled and judged.

Paths in the file (store, runs_dir, pack, model_config) are relative to the file's own folder, so a
cron job's working directory does not matter. Every error names the file and the field.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from evalharness.errors import ConfigError

__all__ = ["DriftConfig", "SampleSpec", "StreamConfig", "load_config", "parse_config"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")


class SampleSpec(BaseModel):
    """A sample of the pack's tasks each day, stratified by a task field (``repo`` by default)."""

    model_config = ConfigDict(extra="forbid")
    size: int = Field(gt=0)
    strata: str | None = "repo"
    rotate: bool = True
    """True: a new sample every day (seeded by stream name + day); False: one sample, the same every day."""


class StreamConfig(BaseModel):
    """One stream: a harness+model pair on a task panel or sample, run once a day."""

    model_config = ConfigDict(extra="forbid")
    name: str
    pack: str
    harness: str
    model: str | None = None
    model_config_file: str | None = Field(default=None, alias="model_config")
    api_base: str | None = None
    api_key_env: str | None = None
    seeds: int = Field(default=1, gt=0)
    tasks: list[str] | None = None
    sample: SampleSpec | None = None
    baseline_days: int = Field(default=30, ge=2)
    short_baseline: bool = False
    """Accept a baseline below the minimum (20 days and 1,000 trials), where the false-alarm promise fails."""
    delta: float = Field(default=0.10, gt=0, lt=1)
    false_alarms_per_year: float = Field(default=1.0, gt=0)
    outage_fraction: float = Field(default=0.5, gt=0, le=1)
    workers: int = Field(default=2, gt=0)
    infra_retries: int = Field(default=2, ge=0)
    max_steps: int | None = Field(default=None, gt=0)
    max_wall_s: float | None = Field(default=None, gt=0)
    timezone: str = "UTC"
    """The IANA time zone whose calendar dates the stream's days are (dates.py): `drift run` without
    ``--day`` counts for today's date there."""

    @field_validator("timezone")
    @classmethod
    def _a_zone(cls, value: str) -> str:
        from evalharness.drift.dates import zone

        zone(value)  # ValueError names it
        return value

    @field_validator("name")
    @classmethod
    def _a_name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(f"{value!r} is not a stream name (letters, digits, '_', '.', '-'; at most 80)")
        return value

    @model_validator(mode="after")
    def _one_task_rule(self) -> "StreamConfig":
        if (self.tasks is None) == (self.sample is None):
            raise ValueError("give either `tasks` (a fixed panel) or `sample` (size, strata, rotate), not both")
        if self.tasks is not None and not self.tasks:
            raise ValueError("`tasks` is empty: list the panel's task ids")
        if self.tasks is not None and len(set(self.tasks)) != len(self.tasks):
            raise ValueError("`tasks` lists a task twice")
        return self

    @model_validator(mode="after")
    def _long_enough_baseline(self) -> "StreamConfig":
        from evalharness.stats.monitor import short_baseline_problem

        per_day = (len(self.tasks) if self.tasks is not None else self.sample.size) * self.seeds
        problem = short_baseline_problem(self.baseline_days, self.baseline_days * per_day)
        if problem and not self.short_baseline:
            raise ValueError(f"baseline_days {self.baseline_days} x {per_day} trials a day: {problem}; raise "
                             "baseline_days or the number of tasks or seeds, or set `short_baseline: true` to "
                             "accept it (docs/drift.md, \"Baseline\")")
        return self

    @property
    def pmf(self) -> str:
        """How the baseline models a day: the same fixed panel every day, or fresh binomial draws."""
        return "binomial" if self.sample is not None and self.sample.rotate else "panel"


class DriftConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    store: str = "runs/evalharness.db"
    """SQLite path or database URL (postgresql://...)."""
    runs_dir: str = "runs"
    alert_dir: str | None = None
    """Folder of the alert files (default: drift-alerts/ beside the SQLite store, else under runs_dir)."""
    streams: list[StreamConfig] = Field(min_length=1)
    source: str = "drift.yaml"

    @model_validator(mode="after")
    def _unique_names(self) -> "DriftConfig":
        names = [s.name for s in self.streams]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"stream names must be unique; given twice: {', '.join(twice)}")
        return self

    def stream(self, name: str) -> StreamConfig:
        for s in self.streams:
            if s.name == name:
                return s
        raise ConfigError(f"{self.source}: no stream {name!r}; streams: {', '.join(s.name for s in self.streams)}")

    @property
    def is_url(self) -> bool:
        return "://" in self.store

    @property
    def alerts_folder(self) -> Path:
        if self.alert_dir:
            return Path(self.alert_dir)
        if not self.is_url:
            return Path(self.store).parent / "drift-alerts"
        return Path(self.runs_dir) / "drift-alerts"


def _relative_to(folder: Path, value: str | None) -> str | None:
    if value is None or "://" in value or Path(value).is_absolute():
        return value
    return str((folder / value).resolve())


def parse_config(data: Any, source: str, folder: Path | None = None) -> DriftConfig:
    """Check a loaded drift.yaml (``source`` names it in errors); resolve its paths against ``folder``."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping with `streams:` (got {type(data).__name__})")
    try:
        config = DriftConfig.model_validate({**data, "source": source})
    except ValidationError as e:
        problems = "; ".join(f"{_where(err['loc'], data)}: {err['msg']}" for err in e.errors())
        raise ConfigError(f"{source} is invalid: {problems}") from None
    if folder is not None:
        config.store = _relative_to(folder, config.store)
        config.runs_dir = _relative_to(folder, config.runs_dir)
        config.alert_dir = _relative_to(folder, config.alert_dir)
        for s in config.streams:
            s.pack = _relative_to(folder, s.pack) if Path(folder, s.pack).exists() else s.pack
            s.model_config_file = _relative_to(folder, s.model_config_file)
    return config


def _where(loc: tuple, data: dict) -> str:
    """A pydantic location as the file's field path, naming a stream by its name: streams[nightly].seeds."""
    parts: list[str] = []
    for i, part in enumerate(loc):
        if isinstance(part, int) and parts and parts[-1] == "streams":
            streams = data.get("streams") or []
            name = streams[part].get("name") if part < len(streams) and isinstance(streams[part], dict) else None
            parts[-1] = f"streams[{name or part}]"
        elif isinstance(part, int):
            parts[-1] = f"{parts[-1]}[{part}]"
        else:
            parts.append(str(part))
    return ".".join(parts) or "(top level)"


def load_config(path: Path) -> DriftConfig:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"no drift configuration at {path}", "write one: docs/drift.md has an example drift.yaml")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise ConfigError(f"{path} is not valid YAML: {e}") from None
    return parse_config(data, str(path), path.resolve().parent)
