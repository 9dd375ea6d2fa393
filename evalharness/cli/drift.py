"""`evalharness drift run|status|report|rebaseline`: daily drift tracking of named streams (docs/drift.md)."""

from __future__ import annotations

import contextlib
import json
import sys
from datetime import date, timedelta
from pathlib import Path

import click

from evalharness.cli._common import CA_BUNDLE, cli
from evalharness.errors import UserError

CONFIG = click.option("--config", "-c", "config_path", type=click.Path(path_type=Path), default=None,
                      help="The drift configuration (drift.yaml).")
FORMAT = click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
                      help="json: one JSON document on stdout and nothing else (messages go to stderr).")


@cli.group("drift")
def drift_cmd() -> None:
    """Track streams (a harness+model on a task panel) every day; alarm only on real change.

    \b
    evalharness drift run --config drift.yaml            # in cron, once a day
    evalharness drift status --config drift.yaml
    evalharness drift report --config drift.yaml -o drift.html
    evalharness drift rebaseline --config drift.yaml --stream nightly
    """


def _day(text: str | None) -> date | None:
    """--day as a date; None when not given (each stream's today, in its time zone)."""
    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise UserError(f"--day {text!r} is not a date (give YYYY-MM-DD)") from None


def _config(path: Path | None):
    from evalharness.drift.config import load_config

    if path is None:
        raise click.UsageError("give --config drift.yaml")
    return load_config(path)


@drift_cmd.command("run")
@CONFIG
@click.option("--day", default=None, envvar="EVALHARNESS_DRIFT_DAY", metavar="YYYY-MM-DD",
              help="The day the trials count for, every stream (default: today's date in each stream's "
                   "`timezone`, UTC unless drift.yaml says otherwise; env EVALHARNESS_DRIFT_DAY).")
@click.option("--stream", "streams", multiple=True, help="Only this stream (repeatable; default: all).")
@click.option("--on-alert", default=None, metavar="COMMAND",
              help="Shell command run once when the run raises an alert not told before; the alert JSON on stdin.")
@click.option("--alert-file", type=click.Path(path_type=Path), default=None,
              help="Where to write the alert JSON (default: drift-alerts/<day>.json beside the store).")
@FORMAT
@CA_BUNDLE
def drift_run_cmd(config_path, day, streams, on_alert, alert_file, fmt, ca_bundle) -> None:
    """Run the day for every stream: one evalharness run per stream and day, idempotent and resumable.

    \b
    A day is a calendar date: --day, else today in the stream's `timezone`
    (an IANA name in drift.yaml; UTC by default), whatever the machine's zone.
    What was alerted stays: a later run of a day (a retried outage) never
    rewrites its recorded alerts or alert file; what it finds is added as a note.

    \b
    A second run the same day adds no trial; a day interrupted or with trials lost
    to infrastructure is resumed (only those trials run). One drift run at a time
    per store (a lock file beside SQLite, an advisory lock on PostgreSQL).

    \b
    Exit codes (with several streams, the most severe: 10 > 11 > 1 > 3 > 0):
      0    no change (also while a baseline is still collecting)
      10   drift alarm: a stream's resolve rate dropped (kind drift)
      11   outage: a day's trials were lost to infrastructure; the day is left out
      1    a user or configuration error, or task errors (fix the pack)
      3    some trials lost to infrastructure on a day that is not an outage:
           run again the same day to retry them
      2    the command line itself is malformed (click's usage error)
      75   refused: another drift run holds this store's lock; nothing was run
           (not counted in the order above: a refused run has no streams)
      130  interrupted; run again the same day to resume
    A failing --on-alert command is reported on stderr and does not change the
    exit code; its alerts are told again by the next drift run.
    """
    from evalharness.drift.run import run_drift

    config = _config(config_path)
    the_day = _day(day)
    try:
        with _refused_when_busy():
            result = run_drift(config, the_day, streams=list(streams) or None, ca_bundle=ca_bundle,
                               alert_file=alert_file, on_alert=on_alert)
    except KeyboardInterrupt:
        again = f"drift run --day {the_day}" if the_day else "drift run"
        click.echo(f"\ninterrupted: containers removed, finished trials stored; run `{again}` again the same day "
                   "to resume it", err=True)
        sys.exit(130)
    if fmt == "json":
        click.echo(json.dumps(result.to_dict(), indent=2, default=str))
    else:
        click.echo(_run_table(result))
    for alert in result.alerts:
        click.echo(f"alert: {alert['stream']} {alert['day']} {alert['kind']}: {alert['message']}", err=True)
    for path in result.alert_files.values():
        click.echo(f"alert file: {path}", err=True)
    sys.exit(result.exit_code)


@contextlib.contextmanager
def _refused_when_busy():
    """Another drift run holds the store's lock: say so and exit EXIT_BUSY (75), never 1 (a config error)."""
    from evalharness.drift.lock import EXIT_BUSY, DriftBusy

    try:
        yield
    except DriftBusy as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(EXIT_BUSY)


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _f(x, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _run_table(result) -> str:
    from evalharness.report.render import text_table

    rows = [["stream", "day", "status", "resolved", "lost (infra)", "baseline", "statistic", "threshold", "alerts",
             "action"]]
    for s in result.streams:
        st = s.status
        rows.append([s.stream, s.day, st.status if st else "error", f"{st.resolved}/{st.usable}" if st else "-",
                     str(st.infra) if st else "-", _baseline_cell(s.summary.get("baseline")),
                     _f(s.summary.get("statistic")), _f(s.summary.get("threshold")),
                     ", ".join(a["kind"] for a in s.alerts) or ("error" if s.error else "-"), s.action or "-"])
    return text_table(rows, f"drift run {result.day or ', '.join(sorted(result.alert_files))} "
                            f"(exit {result.exit_code})")


def _baseline_cell(b) -> str:
    if not b:
        return "-"
    if b["state"] == "collecting":
        return f"collecting {b['have']}/{b['need']} days"
    interval = f" [{_pct(b.get('p0_low'))}, {_pct(b.get('p0_high'))}]" if b.get("p0_low") is not None else ""
    return f"p0 {_pct(b.get('p0'))}{interval}"


def _tables(config_path: Path | None, db: str | None):
    from evalharness.drift.tables import DriftTables
    from evalharness.store import Store, database_url

    if db is None:
        if config_path is None:
            raise click.UsageError("give --config drift.yaml or --db")
        db = _config(config_path).store
    elif "://" not in db and not Path(db).exists():
        raise UserError(f"no database at {db}")
    return DriftTables(Store(database_url(db)))


@drift_cmd.command("status")
@CONFIG
@click.option("--db", default=None, help="Database URL or SQLite path (instead of --config).")
@FORMAT
def drift_status_cmd(config_path, db, fmt) -> None:
    """Each stream's state: days, baseline, promised delay, statistic, threshold, p, last alarm and outage.

    Below the table: the baseline's warnings (short, degenerate), where the detector alarms on the stored
    days as they are now when that differs from the alarms raised (which stay as recorded), and notes of
    later runs of days already evaluated."""
    from evalharness.drift.state import stream_state
    from evalharness.drift.summary import summarise
    from evalharness.report.render import text_table

    tables = _tables(config_path, db)
    states = {name: summarise(stream_state(tables, name)) for name in tables.streams()}
    if fmt == "json":
        click.echo(json.dumps({"streams": [{"stream": k, **v} for k, v in states.items()]}, indent=2, default=str))
        return
    rows = [["stream", "days", "baseline", "promised delay", "statistic", "threshold", "p always-valid",
             "last alarm", "last outage"]]
    for name, s in states.items():
        counts = ", ".join(f"{k} {v}" for k, v in sorted(s["day_counts"].items()))
        rows.append([name, f"{s['days']} ({counts})" if counts else "0", _baseline_cell(s["baseline"]),
                     _delay_cell(s["baseline"]), _f(s["statistic"]), _f(s["threshold"]), _f(s["p_always_valid"], 4),
                     s["last_alarm"] or "-", s["last_outage"] or "-"])
    if not states:
        click.echo("no drift streams in this store yet")
        return
    click.echo(text_table(rows, "drift streams"))
    for line in _status_lines(states):
        click.echo(line)


def _delay_cell(b) -> str:
    """The frozen baseline's promise: median (95th percentile) days to alarm on a drop of delta."""
    if not b or b["state"] != "frozen" or b.get("delay_days") is None:
        return "-"
    drop = f"{100 * b['delta']:.0f}-pt drop: " if b.get("delta") is not None else ""
    p95 = f" (95%: {b['delay_days_95']:.1f})" if b.get("delay_days_95") is not None else ""
    return f"{drop}{b['delay_days']:.1f} d{p95}"


def _status_lines(states: dict) -> list[str]:
    """Below the table, per stream: the baseline's warnings, a re-evaluation that differs from the alarms
    raised, and the notes of later runs of evaluated days."""
    out = []
    for name, s in states.items():
        out += [f"{name}: warning: {w}" for w in s["warnings"]]
        if s["reevaluation"]:
            out.append(f"{name}: {s['reevaluation']}")
        out += [f"{name}: note: {n}" for n in s["notes"]]
    return out


@drift_cmd.command("report")
@CONFIG
@click.option("--db", default=None, help="Database URL or SQLite path (instead of --config).")
@click.option("--output", "-o", type=click.Path(path_type=Path), default=Path("drift-report.html"), show_default=True,
              help="The HTML file to write (self-contained: no network needed to view it).")
def drift_report_cmd(config_path, db, output) -> None:
    """An HTML page per stream: daily rate with the baseline, the CUSUM against its threshold, alarms, outages."""
    from evalharness.drift.report import render_report

    tables = _tables(config_path, db)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(render_report(tables))
    click.echo(f"drift report: {output}", err=True)


@drift_cmd.command("rebaseline")
@CONFIG
@click.option("--stream", required=True, help="The stream to re-baseline.")
def drift_rebaseline_cmd(config_path, stream) -> None:
    """Collect a new baseline from the stream's next day (after a deliberate change); old days are kept.

    Exits 75 when another drift run holds the store's lock (nothing changed), 1 on a configuration error."""
    from evalharness.drift.dates import today_in
    from evalharness.drift.lock import drift_lock
    from evalharness.drift.state import settings_of
    from evalharness.drift.tables import DriftTables
    from evalharness.store import Store, database_url

    config = _config(config_path)
    spec = config.stream(stream)
    store = Store(database_url(config.store))
    with _refused_when_busy(), drift_lock(store.url, store.engine):
        tables = DriftTables(store)
        days = tables.days(stream)
        last = date.fromisoformat(days[-1]["day"]) if days else today_in(spec.timezone) - timedelta(days=1)
        from_day = (last + timedelta(days=1)).isoformat()
        tables.new_epoch(stream, from_day, settings_of(spec))
    click.echo(f"stream {stream}: a new baseline is collected from {from_day} ({spec.baseline_days} ok days); "
               f"{len(days)} earlier day(s) kept", err=True)
