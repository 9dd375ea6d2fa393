"""Terminal progress for long runs (rich), kept out of the library code."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from evalharness.runner import RunConfig, RunSummary, run


def run_with_progress(config: RunConfig | None, *, resume: str | None, runs_dir: Path, db: str | None,
                      ca_bundle: Path | None = None, run_id: str | None = None, name: str | None = None,
                      tags: dict[str, str] | None = None, executor=None) -> RunSummary:
    """Run with a progress bar on stderr, and one line per node that ran trials (``--executor ray``,
    ``--docker-host``); plain lines when stderr is not a terminal."""
    console = Console(stderr=True)
    counts: dict[str, int] = {}
    nodes: dict[str, dict[str, int]] = {}
    bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[counts]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                   console=console, transient=False)
    state: dict[str, Any] = {}

    def on_event(event: str, data: dict[str, Any]) -> None:
        if event == "start":
            console.print(f"run {data['run_id']}: {data['total']} trials "
                          f"({data['skipped']} already done, {data['todo']} to run)")
            bar.start()
            state["task"] = bar.add_task("trials", total=data["todo"], counts="")
        elif event == "log":
            console.print(f"  {data['message']}")
        elif event == "trial":
            counts[data["outcome"]] = counts.get(data["outcome"], 0) + 1
            text = " ".join(f"{k}={v}" for k, v in sorted(counts.items()))
            bar.update(state["task"], advance=1, counts=text)
            node = data.get("node", "local")
            mine = nodes.setdefault(node, {})
            mine[data["outcome"]] = mine.get(data["outcome"], 0) + 1
            if node != "local" or len(nodes) > 1:  # one row per node once trials run anywhere but here
                if node not in state:
                    state[node] = bar.add_task(f"  {node}", total=None, counts="")
                bar.update(state[node], advance=1, counts=" ".join(f"{k}={v}" for k, v in sorted(mine.items())))
            if not sys.stderr.isatty():
                where = f" [{node}]" if node != "local" else ""
                console.print(f"  {data['trial']}: {data['outcome']}{where}")

    try:
        summary = run(config, resume=resume, runs_dir=runs_dir, db=db, progress=on_event, ca_bundle=ca_bundle,
                      run_id=run_id, name=name, tags=tags, executor=executor)
    finally:
        if "task" in state:
            bar.stop()
    console.print(f"run {summary.run_id} finished: {summary.total - summary.skipped} trials run, "
                  f"{len(summary.images_built)} image(s) built; folder {summary.run_dir}")
    if len(summary.nodes) > 1 or set(summary.nodes) - {"local"}:
        console.print("trials per node: " + ", ".join(f"{n} {c}" for n, c in sorted(summary.nodes.items())))
    return summary
