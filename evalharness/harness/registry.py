"""Find a harness by name: a built-in kind, a file in harnesses/, or an import path 'pkg.mod:Cls'."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import Any, Callable

import yaml

from evalharness.errors import ConfigError
from evalharness.types import Harness

REPO_HARNESSES = Path(__file__).resolve().parents[2] / "harnesses"


def _builtin_kinds() -> dict[str, Callable[..., Harness]]:
    from evalharness.harness.builtin import NullHarness, OracleHarness

    kinds: dict[str, Callable[..., Harness]] = {"oracle": OracleHarness, "null": NullHarness}
    for kind, target in EXTRA_KINDS.items():
        kinds[kind] = _lazy(target)
    return kinds


EXTRA_KINDS: dict[str, str] = {
    "minimal": "evalharness.harness.minimal:MinimalHarness",
    "mini-swe-agent": "evalharness.harness.mini_swe:MiniSweAgentHarness",
    "command": "evalharness.harness.command:CommandHarness",
    "predictions": "evalharness.harness.predictions:PredictionsHarness",
}
"""Kinds implemented in optional modules, imported only when used: kind -> 'module:Class'."""


def _lazy(target: str) -> Callable[..., Harness]:
    def make(**knobs: Any) -> Harness:
        return _import(target)(**knobs)

    return make


def search_path() -> list[Path]:
    return [Path.cwd() / "harnesses", REPO_HARNESSES]


def available() -> list[str]:
    names = set(_builtin_kinds())
    for folder in search_path():
        if folder.is_dir():
            names |= {p.stem for p in folder.glob("*.yaml")} | {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    return sorted(names)


def load_harness(spec: str) -> Harness:
    """Resolve ``spec`` (a name, a path to .yaml/.py, or 'pkg.mod:Cls') to a harness instance."""
    path = Path(spec)
    if path.suffix in (".yaml", ".yml", ".py") and path.is_file():
        return _from_file(path)
    kinds = _builtin_kinds()
    for folder in search_path():
        for suffix in (".yaml", ".py"):
            candidate = folder / f"{spec}{suffix}"
            if candidate.is_file():
                return _from_file(candidate)
    if spec in kinds:
        return kinds[spec]()
    if ":" in spec:
        return _import(spec)()
    raise ConfigError(f"unknown harness {spec!r}. Available: {', '.join(available())}")


def _from_file(path: Path) -> Harness:
    if path.suffix == ".py":
        module_spec = importlib.util.spec_from_file_location(f"evalharness_user_harness_{path.stem}", path)
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
        classes = [v for v in vars(module).values()
                   if isinstance(v, type) and v.__module__ == module.__name__ and hasattr(v, "run") and hasattr(v, "name")]
        if len(classes) != 1:
            raise ConfigError(f"harness file {path} must define exactly one harness class (found {len(classes)})")
        return classes[0]()
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"harness file {path} is not valid YAML: {e}") from e
    if not isinstance(raw, dict) or "kind" not in raw:
        raise ConfigError(f"harness file {path}: expected a mapping with a 'kind' field")
    kind = raw.pop("kind")
    kinds = _builtin_kinds()
    if kind not in kinds:
        raise ConfigError(f"harness file {path}: unknown kind {kind!r}. Known kinds: {', '.join(sorted(kinds))}")
    raw.setdefault("name", path.stem)
    try:
        return kinds[kind](**raw)
    except TypeError as e:
        raise ConfigError(f"harness file {path}: {e}") from e


def _import(target: str) -> Any:
    module_name, _, attr = target.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as e:
        raise ConfigError(f"cannot import harness {target!r}: {e}. Available: {', '.join(available())}") from e
