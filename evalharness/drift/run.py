"""The daily step of `drift run`: per stream, the day's one evalharness run, its status, its verdict.

Per stream and day (the day the trials count for, not their wall-clock time):
0. the day: ``--day``, else today's date in the stream's time zone (dates.py);
1. the day's tasks (schedule.py) and ONE run named ``drift:<stream>:<day>``, recorded in
   drift_days before it starts, so a killed `drift run` is found and resumed;
2. idempotent: a day whose run is complete with no infrastructure failure left adds nothing; one
   that was interrupted or lost trials to infrastructure is resumed (only those trials run);
3. the day's status (days.py); the baseline frozen once its ok days are in (state.py);
4. the verdict on the monitored days and the day's alerts (alerts.py), recorded append-only: a later
   run of the day (a retried outage) never rewrites what was alerted; what it finds is a note beside it.
Everything is under one lock per store (lock.py).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, Callable

import yaml

from evalharness.drift import alerts as alerting
from evalharness.drift.config import DriftConfig, StreamConfig
from evalharness.drift.dates import stream_days
from evalharness.drift.days import DayStatus, day_status
from evalharness.drift.lock import drift_lock
from evalharness.drift.schedule import day_tasks
from evalharness.drift.state import freeze_if_due, read_history, settings_of, stream_state
from evalharness.drift.summary import summarise
from evalharness.drift.tables import DriftTables
from evalharness.errors import ConfigError, UserError
from evalharness.store import Store, database_url

__all__ = ["StreamDay", "DriftRun", "run_drift", "summarise"]

Log = Callable[[str], None]


@dataclass
class StreamDay:
    stream: str
    day: str
    run_id: str | None = None
    status: DayStatus | None = None
    action: str = ""
    """new | resumed | unchanged (the day was complete: nothing added)."""
    trials_run: int = 0
    summary: dict[str, Any] = field(default_factory=dict)
    alerts: list[dict[str, Any]] = field(default_factory=list)
    """This run's evaluation of the day (recorded in drift_alerts unless one of the kind is already)."""
    untold: list[dict[str, Any]] = field(default_factory=list)
    """The alerts of this run that --on-alert was not told about before."""
    note: dict[str, Any] | None = None
    """What this run found on a day evaluated before, when it differs (drift_notes)."""
    error: str | None = None

    @property
    def exit_code(self) -> int:
        return alerting.exit_code(alerting.EXIT[a["kind"]] for a in self.alerts) if not self.error else 1

    def to_dict(self) -> dict[str, Any]:
        return {"stream": self.stream, "day": self.day, "run_id": self.run_id, "action": self.action,
                "trials_run": self.trials_run, "status": self.status.to_dict() if self.status else None,
                **self.summary, "alerts": self.alerts, "note": self.note, "error": self.error,
                "exit_code": self.exit_code}


@dataclass
class DriftRun:
    day: str | None
    """The day every stream ran for; None when the streams' time zones put them on different dates."""
    streams: list[StreamDay]
    alert_files: dict[str, Path] = field(default_factory=dict)
    """One alert file per day run."""
    on_alert_error: str | None = None

    @property
    def alerts(self) -> list[dict[str, Any]]:
        return [a for s in self.streams for a in s.alerts]

    @property
    def exit_code(self) -> int:
        return alerting.exit_code(s.exit_code for s in self.streams)

    def to_dict(self) -> dict[str, Any]:
        files = {d: str(p) for d, p in self.alert_files.items()}
        return {"day": self.day, "days": sorted(files), "exit_code": self.exit_code,
                "streams": [s.to_dict() for s in self.streams], "alerts": self.alerts,
                "alert_file": next(iter(files.values())) if len(files) == 1 else None, "alert_files": files,
                "on_alert_error": self.on_alert_error}


def run_drift(config: DriftConfig, day: date | None, *, streams: list[str] | None = None, log: Log | None = None,
              ca_bundle: Path | None = None, alert_file: Path | None = None, on_alert: str | None = None,
              now: datetime | None = None) -> DriftRun:
    """Run the chosen streams (all by default) under the store's drift lock, each for ``day`` or, when None,
    for today in its time zone; then deliver each day's alerts: stored, written to the day's alert file,
    and told to ``on_alert`` if any is new."""
    log = log or (lambda m: print(m, file=sys.stderr, flush=True))
    chosen = [config.stream(n) for n in streams] if streams else list(config.streams)
    days = {name: d.isoformat() for name, d in stream_days({s.name: s.timezone for s in chosen}, day, now).items()}
    if alert_file and len(set(days.values())) > 1:
        raise ConfigError(f"--alert-file names one file, but the streams' time zones put them on different days "
                          f"({_listed(days)}): give --day, or leave the alert files to their folder")
    url = database_url(config.store)
    store = Store(url)
    with drift_lock(url, store.engine):
        tables = DriftTables(store)
        out = DriftRun(next(iter(days.values())) if len(set(days.values())) == 1 else None, [])
        for stream in chosen:
            out.streams.append(_run_stream(config, stream, date.fromisoformat(days[stream.name]), tables, log,
                                           ca_bundle))
        for the_day in sorted(set(days.values())):
            out.alert_files[the_day] = alert_file or config.alerts_folder / f"{the_day}.json"
            deliver(out, the_day, tables, out.alert_files[the_day], on_alert, log)
    return out


def _listed(days: dict[str, str]) -> str:
    return ", ".join(f"{name} {d}" for name, d in days.items())


def deliver(out: "DriftRun", day: str, tables: DriftTables, alert_file: Path, on_alert: str | None,
            log: Log) -> None:
    """Write the day's alert file (always: every alert recorded for the day, as raised, the notes of later runs
    and the exit code of this run's streams on that day) and run ``on_alert`` once when some alert was not
    told before; a failure of it is logged and its alerts are told again by the next run."""
    streams = [s for s in out.streams if s.day == day]
    new = [a for s in streams for a in s.untold]
    document = alerting.alert_document(day, _public(tables.alerts(day=day)),
                                       alerting.exit_code(s.exit_code for s in streams), notes=tables.notes(day=day))
    alerting.write_alert_file(alert_file, document)
    if on_alert and new:
        problem = alerting.run_on_alert(on_alert, {**document, "new": new})
        if problem:
            out.on_alert_error = problem
            log(f"error: --on-alert command {problem}; its alerts are kept and told again by the next drift run")
        else:
            tables.mark_notified(new)
    elif on_alert and any(s.alerts for s in streams):
        log("drift: every alert of this run was told to --on-alert before; not run again")


def _run_stream(config: DriftConfig, stream: StreamConfig, day: date, tables: DriftTables, log: Log,
                ca_bundle: Path | None) -> StreamDay:
    result = StreamDay(stream.name, day.isoformat())
    earlier = _earlier_verdict(tables, stream.name, result.day)
    try:
        _ensure_epoch(tables, stream, result.day)
        _run_trials(config, stream, day, tables, result, log, ca_bundle)
    except UserError as e:
        result.error = str(e)
        log(f"drift {stream.name} {result.day}: error: {e}")
        return result
    row = tables.day(stream.name, result.day)
    result.status = _status(tables, row, stream.outage_fraction)
    tables.put_day(stream.name, result.day, run_id=row["run_id"], **_day_values(result.status))
    if freeze_if_due(tables, stream.name):
        log(f"drift {stream.name}: baseline frozen ({stream.baseline_days} ok days)")
    state = stream_state(tables, stream.name, until=result.day)
    result.alerts = _alerts(stream, result, summarise(state))
    _record(tables, result, earlier, log)
    read_history(tables, state, until=result.day)
    result.summary = summarise(state)
    log(f"drift {stream.name} {result.day}: {result.status.status} ({result.status.resolved}/{result.status.usable} "
        f"resolved, {result.status.infra} lost to infrastructure); {result.action}")
    return result


def _earlier_verdict(tables: DriftTables, stream: str, day: str) -> dict[str, Any] | None:
    """The day's stored status and recorded alert kinds from an earlier run that finished, or None."""
    row = tables.day(stream, day)
    if row is None or row["status"] == "running":
        return None
    return {**row, "kinds": sorted(a["kind"] for a in tables.alerts(stream, day))}


def _record(tables: DriftTables, result: StreamDay, earlier: dict[str, Any] | None, log: Log) -> None:
    """Record the day's alerts (append-only: one already recorded is kept as raised) and, when an earlier
    run of the day had another status or raised an alert this run does not, a note of what this run found
    (an alert this run adds is recorded with its own ``raised_at``: new information, nothing to reconcile)."""
    result.untold = [a for a in result.alerts if tables.put_alert(a)]
    kinds = sorted(a["kind"] for a in result.alerts)
    if earlier is None or (earlier["status"] == result.status.status and set(earlier["kinds"]) <= set(kinds)):
        return
    result.note = _note(result, earlier, kinds)
    tables.add_note(result.note)
    log(f"drift {result.stream} {result.day}: note: {result.note['message']}")


def _note(result: StreamDay, earlier: dict[str, Any], kinds: list[str]) -> dict[str, Any]:
    st, now = result.status, datetime.now(timezone.utc)
    message = (f"{result.day} re-run on {now.date().isoformat()}: now {st.status} ({st.resolved}/{st.usable} "
               f"resolved, {st.infra} lost to infrastructure), was {earlier['status']}")
    if earlier["kinds"]:
        message += f"; the alert(s) raised for {result.day} ({', '.join(earlier['kinds'])}) stand as raised"
    if set(kinds) - set(earlier["kinds"]):
        message += f"; this run raised {', '.join(sorted(set(kinds) - set(earlier['kinds'])))}"
    return {"stream": result.stream, "day": result.day, "run_id": result.run_id, "noted_at": now.isoformat(
        timespec="seconds"), "was": earlier["status"], "now": st.status, "alerts_before": earlier["kinds"],
        "alerts_now": kinds, "message": message}


def _public(alerts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Recorded alerts without the store's bookkeeping (when --on-alert was told)."""
    return [{k: v for k, v in a.items() if k != "notified_at"} for a in alerts]


def _ensure_epoch(tables: DriftTables, stream: StreamConfig, day: str) -> None:
    if tables.epoch(stream.name) is None:
        tables.new_epoch(stream.name, day, settings_of(stream))


def _day_values(status: DayStatus) -> dict[str, Any]:
    return {"status": status.status, "planned": status.planned, "usable": status.usable,
            "resolved": status.resolved, "infra": status.infra, "task_errors": status.task_errors,
            "reason": status.reason}


def _status(tables: DriftTables, row: dict[str, Any], outage_fraction: float) -> DayStatus:
    rows = tables.store.trial_rows([row["run_id"]])
    return day_status(rows, row["planned"], outage_fraction)


def _run_trials(config: DriftConfig, stream: StreamConfig, day: date, tables: DriftTables, result: StreamDay,
                log: Log, ca_bundle: Path | None) -> None:
    """Start, resume or leave alone the day's run (idempotent per day)."""
    from evalharness import runner

    row = tables.day(stream.name, result.day)
    stored = _stored_run(tables.store, row["run_id"]) if row else None
    common = {"runs_dir": Path(config.runs_dir), "db": database_url(config.store), "ca_bundle": ca_bundle,
              "progress": _progress(stream.name, result.day, log)}
    if row and stored:
        result.run_id = row["run_id"]
        status = _status(tables, row, stream.outage_fraction)
        if stored["status"] == "completed" and status.infra == 0:
            result.action = "unchanged (the day is complete; nothing added)"
            return
        result.action = "resumed"
        log(f"drift {stream.name} {result.day}: resuming run {row['run_id']} ({status.infra} trial(s) to retry)")
        summary = runner.run(resume=row["run_id"], **common)
    else:
        tasks = day_tasks(stream, _pack_tasks(stream.pack), day)
        run_id = row["run_id"] if row else runner.new_run_id()
        planned = len(tasks) * stream.seeds
        tables.put_day(stream.name, result.day, run_id=run_id, status="running", planned=planned, usable=0,
                       resolved=0, infra=0, task_errors=0, reason="")
        result.run_id, result.action = run_id, "new"
        log(f"drift {stream.name} {result.day}: run {run_id}, {len(tasks)} task(s) x {stream.seeds} seed(s)")
        summary = runner.run(_run_config(stream, tasks), run_id=run_id, name=f"drift:{stream.name}:{result.day}",
                        tags={"drift_stream": stream.name, "drift_day": result.day}, **common)
    result.trials_run = summary.total - summary.skipped


def _stored_run(store: Store, run_id: str) -> dict[str, Any] | None:
    try:
        return store.get_run(run_id)
    except UserError:
        return None  # recorded in drift_days, killed before the run was created: start it under that id


def _progress(stream: str, day: str, log: Log):
    def progress(event: str, data: dict[str, Any]) -> None:
        if event == "trial":
            log(f"drift {stream} {day}: {data.get('trial')}: {data.get('outcome')}")
        elif event == "log":
            log(f"drift {stream} {day}: {data.get('message')}")
    return progress


def _pack_tasks(pack_path: str) -> dict[str, dict[str, Any]]:
    from evalharness.packs import load_pack

    pack = load_pack(pack_path)
    return {t.instance_id: t.model_dump(mode="json") for t in pack.tasks}


def _run_config(stream: StreamConfig, tasks: list[str]):
    from pydantic import ValidationError

    from evalharness.runner import RunConfig
    from evalharness.types import Budget

    try:
        return RunConfig(pack=stream.pack, harnesses=[stream.harness], models=_endpoints(stream),
                         seeds=list(range(stream.seeds)), workers=stream.workers, tasks=tasks,
                         infra_retries=stream.infra_retries,
                         budget=Budget(max_steps=stream.max_steps, max_wall_s=stream.max_wall_s))
    except ValidationError as e:
        raise ConfigError(f"stream {stream.name}: invalid run settings: {e}") from None


def _endpoints(stream: StreamConfig) -> list:
    """The stream's model as a ModelEndpoint: fields from its model_config file, then api_base/api_key_env."""
    from pydantic import ValidationError

    from evalharness.types import ModelEndpoint

    if stream.model is None:
        return []
    base: dict[str, Any] = {}
    if stream.model_config_file:
        path = Path(stream.model_config_file)
        try:
            base = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as e:
            raise ConfigError(f"stream {stream.name}: model_config {path} cannot be read: {e}") from None
        if not isinstance(base, dict):
            raise ConfigError(f"stream {stream.name}: model_config {path}: expected a mapping of endpoint fields")
    per_model = (base.pop("models", None) or {}).get(stream.model, {})
    given = {k: v for k, v in {"api_base": stream.api_base, "api_key_env": stream.api_key_env}.items() if v}
    try:
        return [ModelEndpoint.model_validate({**base, **per_model, **given, "name": stream.model})]
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())
        raise ConfigError(f"stream {stream.name}: model settings are invalid: {problems}") from None


def _alerts(stream: StreamConfig, result: StreamDay, s: dict[str, Any]) -> list[dict[str, Any]]:
    """The day's alerts: drift (the detector alarms on this day), outage, task_error, infra."""
    status = result.status
    base = {"stream": stream.name, "day": result.day, "run_id": result.run_id, "planned": status.planned,
            "usable": status.usable, "resolved": status.resolved, "infra": status.infra,
            "rate": status.resolved / status.usable if status.usable else None,
            "p0": (s["baseline"] or {}).get("p0"), "statistic": s["statistic"], "threshold": s["threshold"],
            "p_always_valid": s["p_always_valid"], "change_day": s["change_day"]}
    out = []
    if result.day in s["detector_alarm_days"]:
        message = (f"resolve rate dropped: CUSUM {s['statistic']:.2f} >= threshold {s['threshold']:.2f} "
                   f"(change from {s['change_day']})")
        out.append({**base, "kind": "drift", "message": message})
    if status.status == "outage":
        out.append({**base, "kind": "outage", "message": f"outage: {status.reason}; the day is left out"})
    elif status.infra:
        out.append({**base, "kind": "infra", "message": f"{status.reason}; run again today to retry them"})
    if status.task_errors:
        out.append({**base, "kind": "task_error", "message": f"{status.task_errors} trial(s) are task errors "
                                                             "(broken tasks or verifiers, left out): fix the pack"})
    return out
