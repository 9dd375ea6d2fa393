"""Results store: SQLAlchemy Core over SQLite (default) or any database URL (PostgreSQL).

Each trial is written once, in one transaction, after its run folder is complete. A trial
whose stored outcome is an infrastructure failure or a task error may be replaced by a retry
(on resume); nothing else is ever overwritten. A run records its runner's host, pid and
heartbeat, so a killed runner's run can be told from a live one (evalharness.liveness). A run may
carry a name and tags (``key=value`` labels, fixed when it is created) by which machines find it again.
"""

from __future__ import annotations

import json
import re
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from evalharness.errors import UserError
from evalharness.review.codes import ARMS, REASONS, VERDICTS

metadata = sa.MetaData()
TASK_ERROR = "task_error"  # evalharness.types.Outcome.TASK_ERROR: replaced by a retry like infrastructure failures
VERIFIER_ERROR = "verifier_error"  # Outcome.VERIFIER_ERROR (a Harbor verifier gave no valid reward): retried too
RETRIED = (TASK_ERROR, VERIFIER_ERROR)


class FlagList(sa.types.TypeDecorator):
    """A trial's flags (evalharness.types.Flag values) as a sorted JSON list in a TEXT column (any database)."""

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Any) -> str:
        return json.dumps(sorted({str(getattr(v, "value", v)) for v in value or ()}))

    def process_result_value(self, value: Any, dialect: Any) -> list[str]:
        return json.loads(value) if value else []


class TagMap(sa.types.TypeDecorator):
    """A run's tags as a JSON object with sorted keys in a TEXT column (any database); ``{}`` when it has none."""

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Any) -> str:
        return json.dumps(dict(value or {}), sort_keys=True)

    def process_result_value(self, value: Any, dialect: Any) -> dict[str, str]:
        return json.loads(value) if value else {}


TAG_KEY = re.compile(r"[A-Za-z0-9_.-]+")
"""What a tag key may be; its value is any text."""
NAME_MAX = 200


runs = sa.Table(
    "runs", metadata,
    sa.Column("run_id", sa.String(80), primary_key=True),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("status", sa.String(20), nullable=False),
    sa.Column("pack", sa.String(200), nullable=False),
    sa.Column("pack_hash", sa.String(64), nullable=False),
    sa.Column("evalharness_version", sa.String(40), nullable=False),
    sa.Column("git_commit", sa.String(64), nullable=True),
    sa.Column("config", sa.Text, nullable=False),
    sa.Column("runner_host", sa.String(255), nullable=True),
    sa.Column("runner_pid", sa.Integer, nullable=True),
    sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("name", sa.String(NAME_MAX), nullable=True),
    sa.Column("tags", TagMap, nullable=False, server_default="{}"),
)

trials = sa.Table(
    "trials", metadata,
    sa.Column("run_id", sa.String(80), sa.ForeignKey("runs.run_id"), primary_key=True),
    sa.Column("trial_id", sa.String(400), primary_key=True),
    sa.Column("pack", sa.String(200), nullable=False),
    sa.Column("task_id", sa.String(200), nullable=False),
    sa.Column("harness", sa.String(200), nullable=False),
    sa.Column("model", sa.String(200), nullable=False),
    sa.Column("seed", sa.Integer, nullable=False),
    sa.Column("outcome", sa.String(40), nullable=False),
    sa.Column("resolved", sa.Boolean, nullable=False),
    sa.Column("infra", sa.Boolean, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("cost_usd", sa.Float, nullable=True),
    sa.Column("input_tokens", sa.Integer, nullable=False),
    sa.Column("output_tokens", sa.Integer, nullable=False),
    sa.Column("cached_tokens", sa.Integer, nullable=False),
    sa.Column("calls", sa.Integer, nullable=False),
    sa.Column("duration_s", sa.Float, nullable=False),
    sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("repo", sa.String(200), nullable=False),
    sa.Column("detail", sa.Text, nullable=False),
    sa.Column("flags", FlagList, nullable=False, server_default="[]"),
    sa.Column("reward", sa.Float, nullable=True),
    sa.Column("rewards", sa.Text, nullable=True),
)

audit_findings = sa.Table(  # one row per (pack, task, probe, seed): the latest finding (evalharness.audit)
    "audit_findings", metadata,
    sa.Column("pack", sa.String(200), primary_key=True),
    sa.Column("task_id", sa.String(200), primary_key=True),
    sa.Column("probe", sa.String(80), primary_key=True),
    sa.Column("seed", sa.Integer, primary_key=True),
    sa.Column("family", sa.String(40), nullable=False),  # "" for a finding of no family (Finding.family None)
    sa.Column("flagged", sa.Boolean, nullable=False),
    sa.Column("severity", sa.Integer, nullable=False),
    sa.Column("status", sa.String(20), nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("evidence", sa.Text, nullable=False),
    sa.Column("inputs_hash", sa.String(64), nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
)

audit_labels = sa.Table(  # every human label ever given, with annotator and time (the latest per annotator counts)
    "audit_labels", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("pack", sa.String(200), nullable=False, index=True),
    sa.Column("task_id", sa.String(200), nullable=False),
    sa.Column("annotator", sa.String(120), nullable=False),
    sa.Column("broken", sa.Boolean, nullable=False),
    sa.Column("family", sa.String(40), nullable=True),
    sa.Column("severity", sa.Integer, nullable=False),
    sa.Column("note", sa.Text, nullable=False, server_default=""),
    sa.Column("source", sa.String(40), nullable=False, server_default="web"),
    sa.Column("labelled_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("seconds", sa.Float, nullable=True),
)

reviews = sa.Table(  # every merge review ever given (evalharness.review); the latest per (reviewer, item) counts
    "reviews", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("pack", sa.String(200), nullable=False, index=True),
    sa.Column("task_id", sa.String(200), nullable=False),
    sa.Column("arm", sa.String(10), nullable=False),  # agent: a trial's patch; gold: the task's reference patch
    sa.Column("run_id", sa.String(80), nullable=True, index=True),  # agent arm only
    sa.Column("trial_id", sa.String(400), nullable=True),  # agent arm only
    sa.Column("reviewer", sa.String(120), nullable=False),
    sa.Column("verdict", sa.String(30), nullable=False),
    sa.Column("reasons", FlagList, nullable=False, server_default="[]"),
    sa.Column("note", sa.Text, nullable=False, server_default=""),
    sa.Column("seconds", sa.Float, nullable=True),
    sa.Column("source", sa.String(40), nullable=False, server_default="web"),
    sa.Column("reviewed_at", sa.DateTime(timezone=True), nullable=False),
)

schema_version = sa.Table("schema_version", metadata, sa.Column("version", sa.Integer, nullable=False))

MIGRATIONS: list[str] = [
    "ALTER TABLE trials ADD COLUMN flags TEXT NOT NULL DEFAULT '[]'",  # 2: trial flags (issue 7)
    "ALTER TABLE runs ADD COLUMN runner_host VARCHAR(255)",  # 3-5: who runs the run, for stale runs (liveness.py)
    "ALTER TABLE runs ADD COLUMN runner_pid INTEGER",
    "ALTER TABLE runs ADD COLUMN heartbeat_at TIMESTAMP WITH TIME ZONE",
    f"ALTER TABLE runs ADD COLUMN name VARCHAR({NAME_MAX})",  # 6-7: runs that machines find again (issue 11)
    "ALTER TABLE runs ADD COLUMN tags TEXT NOT NULL DEFAULT '{}'",
    "ALTER TABLE trials ADD COLUMN reward FLOAT",  # 8-9: a Harbor verifier's reward and named rewards (issue 25)
    "ALTER TABLE trials ADD COLUMN rewards TEXT",
]
"""SQL statements applied in order after version 1; the index + 2 is the version they bring."""


def database_url(path_or_url: str | Path) -> str:
    text = str(path_or_url)
    return text if "://" in text else f"sqlite:///{Path(text).resolve()}"


class Store:
    """Thread-safe access to runs and trials."""

    def __init__(self, url: str):
        self.url = url
        kwargs: dict[str, Any] = {"future": True}
        if url.startswith("sqlite:///"):
            Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        if url.startswith("sqlite"):
            kwargs["connect_args"] = {"timeout": 30, "check_same_thread": False}
        self.engine = sa.create_engine(url, **kwargs)
        if url.startswith("sqlite"):
            sa.event.listen(self.engine, "connect", _sqlite_pragmas)
        self._lock = threading.Lock()
        self._migrate()

    def _migrate(self) -> None:
        metadata.create_all(self.engine)
        with self.engine.begin() as conn:
            current = conn.execute(sa.select(schema_version.c.version)).scalar()
            if current is None:
                conn.execute(schema_version.insert().values(version=1 + len(MIGRATIONS)))
                return
            for statement in MIGRATIONS[current - 1:]:
                conn.execute(sa.text(statement))
            conn.execute(schema_version.update().values(version=1 + len(MIGRATIONS)))

    def create_run(self, run_id: str, *, pack: str, pack_hash: str, version: str, git_commit: str | None,
                   config: dict[str, Any], name: str | None = None, tags: dict[str, str] | None = None) -> None:
        check_labels(name, tags)
        with self._lock, self.engine.begin() as conn:
            conn.execute(runs.insert().values(
                run_id=run_id, created_at=_now(), status="running", pack=pack, pack_hash=pack_hash,
                evalharness_version=version, git_commit=git_commit, config=json.dumps(config, sort_keys=True),
                name=name, tags=tags or {}))

    def set_status(self, run_id: str, status: str) -> None:
        with self._lock, self.engine.begin() as conn:
            conn.execute(runs.update().where(runs.c.run_id == run_id).values(status=status))

    def set_runner(self, run_id: str, *, host: str, pid: int) -> None:
        """The run is running now, by process ``pid`` on ``host``; its heartbeat starts."""
        with self._lock, self.engine.begin() as conn:
            conn.execute(runs.update().where(runs.c.run_id == run_id).values(
                status="running", runner_host=host, runner_pid=pid, heartbeat_at=_now()))

    def heartbeat(self, run_id: str) -> None:
        with self._lock, self.engine.begin() as conn:
            conn.execute(runs.update().where(runs.c.run_id == run_id).values(heartbeat_at=_now()))

    def get_run(self, run_id: str) -> dict[str, Any]:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(runs).where(runs.c.run_id == run_id)).mappings().first()
        if row is None:
            raise UserError(f"no run {run_id!r} in {self.url}", "list runs with: evalharness runs")
        return {**row, "config": json.loads(row["config"])}

    def list_runs(self) -> list[dict[str, Any]]:
        """Every run, oldest first, with its trial and resolved counts, name, tags and config."""
        with self.engine.connect() as conn:
            return [_run_row(r) for r in conn.execute(_runs_query().order_by(runs.c.created_at, runs.c.run_id))
                    .mappings()]

    def find_runs(self, name: str | None = None, tags: dict[str, str] | None = None) -> list[dict[str, Any]]:
        """Runs named ``name`` (when given) whose tags hold every pair of ``tags``, newest first; rows as list_runs."""
        query = _runs_query().order_by(runs.c.created_at.desc(), runs.c.run_id.desc())
        if name is not None:
            query = query.where(runs.c.name == name)
        wanted = dict(tags or {})
        with self.engine.connect() as conn:
            rows = [_run_row(r) for r in conn.execute(query).mappings()]
        return [r for r in rows if all(r["tags"].get(k) == v for k, v in wanted.items())]

    def record_trial(self, row: dict[str, Any]) -> None:
        """Insert one trial; replaces only a stored infrastructure failure, task or verifier error of the same trial."""
        with self._lock, self.engine.begin() as conn:
            key = (trials.c.run_id == row["run_id"]) & (trials.c.trial_id == row["trial_id"])
            existing = conn.execute(sa.select(trials.c.infra, trials.c.outcome).where(key)).first()
            if existing is not None:
                if not (existing.infra or existing.outcome in RETRIED):
                    raise RuntimeError(f"trial {row['trial_id']} of run {row['run_id']} is already recorded")
                conn.execute(trials.delete().where(key))
            conn.execute(trials.insert().values(**row))

    def done_trials(self, run_id: str) -> set[str]:
        """Trials with a final result: not an infrastructure failure, not a task or verifier error (a resume
        retries those: docs/task-format.md, "Harbor tasks")."""
        with self.engine.connect() as conn:
            final = (trials.c.run_id == run_id) & ~trials.c.infra & trials.c.outcome.notin_(RETRIED)
            rows = conn.execute(sa.select(trials.c.trial_id).where(final))
            return {r.trial_id for r in rows}

    def trial_rows(self, run_ids: list[str]) -> list[dict[str, Any]]:
        with self.engine.connect() as conn:
            query = sa.select(trials).where(trials.c.run_id.in_(run_ids)).order_by(trials.c.run_id, trials.c.trial_id)
            return [dict(r) for r in conn.execute(query).mappings()]

    def find_trials(self, trial_id: str, run_id: str | None = None) -> list[dict[str, Any]]:
        """The stored trials whose id is ``trial_id`` (in ``run_id`` only, when given), oldest run first."""
        query = sa.select(trials).where(trials.c.trial_id == trial_id)
        if run_id is not None:
            query = query.where(trials.c.run_id == run_id)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(query.order_by(trials.c.run_id)).mappings()]

    # audits (evalharness.audit): findings are derived data, replaced when a task is audited again
    def record_finding(self, pack: str, finding: Any) -> None:
        """Store ``finding`` (an ``audit.findings.Finding``) as the current one of its (task, probe, seed)."""
        row = dict(pack=pack, task_id=finding.task_id, probe=finding.probe, seed=finding.seed,
                   family=finding.family or "",
                   flagged=finding.flagged, severity=finding.severity, status=finding.status, reason=finding.reason,
                   evidence=json.dumps(finding.evidence, sort_keys=True, default=str),
                   inputs_hash=finding.inputs_hash, created_at=_now())
        with self._lock, self.engine.begin() as conn:
            key = ((audit_findings.c.pack == pack) & (audit_findings.c.task_id == finding.task_id)
                   & (audit_findings.c.probe == finding.probe) & (audit_findings.c.seed == finding.seed))
            conn.execute(audit_findings.delete().where(key))
            conn.execute(audit_findings.insert().values(**row))

    def forget_finding(self, pack: str, task_id: str, probe: str, seed: int) -> None:
        """Remove the stored finding of (task, probe, seed): one no audit makes any more."""
        with self._lock, self.engine.begin() as conn:
            conn.execute(audit_findings.delete().where(
                (audit_findings.c.pack == pack) & (audit_findings.c.task_id == task_id)
                & (audit_findings.c.probe == probe) & (audit_findings.c.seed == seed)))

    def findings(self, pack: str) -> list[dict[str, Any]]:
        with self.engine.connect() as conn:
            query = (sa.select(audit_findings).where(audit_findings.c.pack == pack)
                     .order_by(audit_findings.c.task_id, audit_findings.c.probe, audit_findings.c.seed))
            return [{**r, "family": r["family"] or None, "evidence": json.loads(r["evidence"])}
                    for r in conn.execute(query).mappings()]

    def record_label(self, pack: str, *, task_id: str, annotator: str, broken: bool, severity: int,
                     family: str | None = None, note: str = "", source: str = "web", seconds: float | None = None,
                     labelled_at: datetime | None = None) -> None:
        """Add one human label; earlier labels of the same annotator are kept (the latest counts)."""
        self.record_labels(pack, [dict(task_id=task_id, annotator=annotator, broken=broken, severity=severity,
                                       family=family, note=note, source=source, seconds=seconds,
                                       labelled_at=labelled_at)])

    def record_labels(self, pack: str, labels: list[dict[str, Any]]) -> None:
        """Add several labels in one transaction: all of them are stored, or (on any error) none."""
        rows = []
        for label in labels:
            annotator = str(label.get("annotator") or "").strip()
            if not annotator:
                raise UserError("a label needs an annotator name")
            if label["severity"] not in (0, 1, 2, 3):
                raise UserError(f"severity must be 0-3, got {label['severity']!r}")
            rows.append(dict(pack=pack, task_id=label["task_id"], annotator=annotator, broken=bool(label["broken"]),
                             family=label.get("family"), severity=int(label["severity"]),
                             note=label.get("note") or "", source=label.get("source") or "web",
                             seconds=label.get("seconds"), labelled_at=label.get("labelled_at") or _now()))
        if not rows:
            return
        with self._lock, self.engine.begin() as conn:
            conn.execute(audit_labels.insert(), rows)

    def labels(self, pack: str, *, latest: bool = True) -> list[dict[str, Any]]:
        """Labels of ``pack``: the latest per (task, annotator), or every label given (``latest=False``)."""
        with self.engine.connect() as conn:
            query = (sa.select(audit_labels).where(audit_labels.c.pack == pack)
                     .order_by(audit_labels.c.labelled_at, audit_labels.c.id))
            rows = [dict(r) for r in conn.execute(query).mappings()]
        if not latest:
            return rows
        last: dict[tuple[str, str], dict[str, Any]] = {}
        for r in rows:
            last[(r["task_id"], r["annotator"])] = r
        return sorted(last.values(), key=lambda r: (r["task_id"], r["annotator"]))

    # merge reviews (evalharness.review): every review is kept, the latest per (reviewer, item) counts
    def record_reviews(self, items: list[dict[str, Any]]) -> None:
        """Add merge reviews in one transaction: all are stored, or (on any error, a ``UserError`` naming the
        row) none. A row has pack, task_id, arm, reviewer, verdict, reasons; an ``agent`` row also run_id and
        trial_id of a stored trial; optional note, seconds, source, reviewed_at."""
        rows = [_review_row(i, item) for i, item in enumerate(items, 1)]
        if not rows:
            return
        with self._lock, self.engine.begin() as conn:
            for i, row in enumerate(rows, 1):
                if row["arm"] == "agent":
                    key = (trials.c.run_id == row["run_id"]) & (trials.c.trial_id == row["trial_id"])
                    task = conn.execute(sa.select(trials.c.task_id, trials.c.pack).where(key)).first()
                    if task is None:
                        raise UserError(f"review {i}: no trial {row['trial_id']!r} in run {row['run_id']!r}")
                    if (task.task_id, task.pack) != (row["task_id"], row["pack"]):
                        raise UserError(f"review {i}: trial {row['trial_id']!r} is task {task.task_id!r} of pack "
                                        f"{task.pack!r}, not {row['task_id']!r} of {row['pack']!r}")
            conn.execute(reviews.insert(), rows)

    def reviews(self, run_ids: list[str], *, latest: bool = True) -> list[dict[str, Any]]:
        """Reviews of the trials of ``run_ids`` and of the gold patches of their packs' tasks: the latest per
        (reviewer, item) (an item is a trial, or a pack's task for the gold arm), or every one (``latest=False``)."""
        with self.engine.connect() as conn:
            packs = [r.pack for r in conn.execute(sa.select(trials.c.pack).where(trials.c.run_id.in_(run_ids))
                                                  .distinct())]
            wanted = (((reviews.c.arm == "agent") & reviews.c.run_id.in_(run_ids))
                      | ((reviews.c.arm == "gold") & reviews.c.pack.in_(packs)))
            query = sa.select(reviews).where(wanted).order_by(reviews.c.reviewed_at, reviews.c.id)
            rows = [dict(r) for r in conn.execute(query).mappings()]
        if not latest:
            return rows
        last: dict[tuple, dict[str, Any]] = {}
        for r in rows:
            item = (r["run_id"], r["trial_id"]) if r["arm"] == "agent" else (r["pack"], r["task_id"])
            last[(r["reviewer"], r["arm"], *item)] = r
        return sorted(last.values(), key=lambda r: (r["pack"], r["task_id"], r["arm"], r["trial_id"] or "",
                                                    r["reviewer"]))


def _review_row(i: int, item: dict[str, Any]) -> dict[str, Any]:
    """One review checked (a ``UserError`` naming row ``i`` and what is wrong) and made a row of ``reviews``."""
    reviewer = str(item.get("reviewer") or "").strip()
    if not reviewer:
        raise UserError(f"review {i}: a review needs a reviewer name")
    if item.get("arm") not in ARMS:
        raise UserError(f"review {i}: arm must be one of {', '.join(ARMS)}, got {item.get('arm')!r}")
    if item.get("verdict") not in VERDICTS:
        raise UserError(f"review {i}: verdict must be one of {', '.join(VERDICTS)}, got {item.get('verdict')!r}")
    reasons = item.get("reasons") or []
    if isinstance(reasons, str) or not all(isinstance(r, str) for r in reasons):
        raise UserError(f"review {i}: reasons must be a list of reason codes, got {reasons!r}")
    unknown = sorted(set(reasons) - set(REASONS))
    if unknown:
        raise UserError(f"review {i}: unknown reason {', '.join(unknown)}; reasons are {', '.join(REASONS)}")
    if item["verdict"] == "merge" and reasons:
        raise UserError(f"review {i}: a merge verdict gives no reasons (they say why a patch is not merged as is)")
    for key in ("pack", "task_id"):
        if not str(item.get(key) or "").strip():
            raise UserError(f"review {i}: {key} is missing")
    agent = item["arm"] == "agent"
    if agent and not (item.get("run_id") and item.get("trial_id")):
        raise UserError(f"review {i}: an agent review names the run_id and trial_id it reviews")
    seconds = item.get("seconds")
    if seconds is not None and not (isinstance(seconds, (int, float)) and not isinstance(seconds, bool)
                                    and 0 <= seconds < 10**7):
        raise UserError(f"review {i}: seconds must be a non-negative number, got {seconds!r}")
    return dict(pack=item["pack"], task_id=item["task_id"], arm=item["arm"],
                run_id=item.get("run_id") if agent else None, trial_id=item.get("trial_id") if agent else None,
                reviewer=reviewer, verdict=item["verdict"], reasons=list(reasons), note=str(item.get("note") or ""),
                seconds=None if seconds is None else float(seconds), source=str(item.get("source") or "web"),
                reviewed_at=item.get("reviewed_at") or _now())


def check_labels(name: str | None, tags: dict[str, str] | None) -> None:
    """A run's name is 1-200 characters of text; each tag key matches TAG_KEY and its value is a string."""
    if name is not None and not (isinstance(name, str) and name.strip() and len(name) <= NAME_MAX):
        raise UserError(f"a run name is 1-{NAME_MAX} characters, not only spaces; got {name!r}")
    for key, value in (tags or {}).items():
        if not (isinstance(key, str) and TAG_KEY.fullmatch(key)):
            raise UserError(f"tag key {key!r} is not valid: use letters, digits, '_', '.' and '-'")
        if not isinstance(value, str):
            raise UserError(f"tag {key!r}: the value must be text, got {value!r}")


def _runs_query() -> sa.Select:
    counts = (sa.select(trials.c.run_id, sa.func.count().label("trials"),
                        sa.func.sum(sa.cast(trials.c.resolved, sa.Integer)).label("resolved"))
              .group_by(trials.c.run_id).subquery())
    return (sa.select(runs.c.run_id, runs.c.created_at, runs.c.status, runs.c.pack, runs.c.runner_host,
                      runs.c.runner_pid, runs.c.heartbeat_at, runs.c.name, runs.c.tags, runs.c.config,
                      counts.c.trials, counts.c.resolved)
            .select_from(runs.outerjoin(counts, runs.c.run_id == counts.c.run_id)))


def _run_row(row: Any) -> dict[str, Any]:
    return {**row, "config": json.loads(row["config"]), "trials": row["trials"] or 0,
            "resolved": int(row["resolved"] or 0)}


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cursor = dbapi_conn.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _now() -> datetime:
    return datetime.now(timezone.utc)
