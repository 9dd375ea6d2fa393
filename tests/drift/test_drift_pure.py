"""The drift decisions without Docker: the day's tasks, the day's status, config errors, exit codes, alerts.

Pins: a rotating sample that differs between machines or re-runs of a day; an outage counted as
failures; a config typo that runs anyway; several streams returning the mildest exit code.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from datetime import date

import pytest

from evalharness.drift import alerts
from evalharness.drift.config import load_config, parse_config
from evalharness.drift.days import day_status
from evalharness.drift.schedule import day_tasks
from evalharness.errors import ConfigError

TASKS = {f"{repo}-{i}": {"repo": repo, "version": "1"} for repo, n in (("a", 6), ("b", 3), ("c", 1)) for i in range(n)}


def _stream(**fields):
    base = {"name": "nightly", "pack": "p", "harness": "minimal", "model": "openai/x", "short_baseline": True}
    return parse_config({"streams": [{**base, **fields}]}, "drift.yaml").streams[0]


def test_a_fixed_panel_is_the_same_every_day_and_unknown_ids_are_named():
    s = _stream(tasks=["a-1", "b-0"])
    assert day_tasks(s, TASKS, date(2026, 1, 1)) == day_tasks(s, TASKS, date(2026, 5, 1)) == ["a-1", "b-0"]
    with pytest.raises(ConfigError, match="zz-9"):
        day_tasks(_stream(tasks=["a-1", "zz-9"]), TASKS, date(2026, 1, 1))


def test_a_rotating_sample_is_reproducible_per_day_and_stratified():
    s = _stream(sample={"size": 5, "strata": "repo"})
    d1, d2 = date(2026, 1, 1), date(2026, 1, 2)
    assert day_tasks(s, TASKS, d1) == day_tasks(s, TASKS, d1)
    days = [day_tasks(s, TASKS, date.fromordinal(d1.toordinal() + k)) for k in range(30)]
    assert len({tuple(d) for d in days}) > 5  # it rotates
    for chosen in days:  # 6:3:1 of 5 is 3, 1.5, 0.5: a gets 3, the tie of remainders goes to b by name
        per = Counter(TASKS[t]["repo"] for t in chosen)
        assert len(chosen) == 5 and (per["a"], per["b"], per["c"]) == (3, 2, 0)
    assert day_tasks(_stream(name="other", sample={"size": 5}), TASKS, d1) != day_tasks(s, TASKS, d1) or \
        day_tasks(_stream(name="other", sample={"size": 5}), TASKS, d2) != day_tasks(s, TASKS, d2)


def test_a_fixed_sample_does_not_rotate():
    s = _stream(sample={"size": 4, "rotate": False})
    assert day_tasks(s, TASKS, date(2026, 1, 1)) == day_tasks(s, TASKS, date(2026, 3, 9))
    assert s.pmf == "panel" and _stream(sample={"size": 4}).pmf == "binomial"


def test_a_sample_names_a_missing_strata_field_and_a_size_too_large():
    with pytest.raises(ConfigError, match="sample.strata 'team' is not a task field"):
        day_tasks(_stream(sample={"size": 2, "strata": "team"}), TASKS, date(2026, 1, 1))
    with pytest.raises(ConfigError, match="sample.size 11 is more than the pack's 10 tasks"):
        day_tasks(_stream(sample={"size": 11}), TASKS, date(2026, 1, 1))


def _rows(**counts):
    out = []
    for outcome, n in counts.items():
        infra = outcome in ("model_unavailable", "sandbox_error")
        out += [{"outcome": outcome, "resolved": outcome == "resolved", "infra": infra}] * n
    return out


def test_day_status_ok_partial_outage_and_task_errors():
    ok = day_status(_rows(resolved=3, unresolved=1), planned=4)
    assert (ok.status, ok.usable, ok.resolved, ok.infra) == ("ok", 4, 3, 0)
    partial = day_status(_rows(resolved=3, model_unavailable=1), planned=4)
    assert (partial.status, partial.usable, partial.resolved, partial.infra) == ("partial", 3, 3, 1)
    assert "model_unavailable x1" in partial.reason
    outage = day_status(_rows(resolved=2, model_unavailable=2), planned=4)  # exactly the fraction: an outage
    assert outage.status == "outage" and outage.usable == 2
    missing = day_status(_rows(resolved=1), planned=4)  # trials never stored are lost too
    assert missing.status == "outage" and missing.infra == 3 and "not run x3" in missing.reason
    broken = day_status(_rows(resolved=1, task_error=1), planned=2)
    assert (broken.status, broken.usable, broken.task_errors, broken.infra) == ("ok", 1, 1, 0)
    assert day_status(_rows(task_error=2), planned=2).status == "empty"
    assert day_status(_rows(resolved=9, sandbox_error=1), planned=10, outage_fraction=0.1).status == "outage"


def test_config_errors_name_the_file_and_the_field(tmp_path):
    path = tmp_path / "drift.yaml"
    path.write_text("streams:\n  - name: nightly\n    pack: p\n    harness: minimal\n    tasks: [a]\n    seeds: 0\n")
    with pytest.raises(ConfigError, match=r"drift.yaml is invalid: streams\[nightly\].seeds"):
        load_config(path)
    path.write_text("streams:\n  - name: nightly\n    pack: p\n    harness: minimal\n    tasks: [a]\n    sede: 2\n")
    with pytest.raises(ConfigError, match=r"streams\[nightly\].sede: Extra inputs"):
        load_config(path)
    with pytest.raises(ConfigError, match="either `tasks`"):
        parse_config({"streams": [{"name": "n", "pack": "p", "harness": "h"}]}, "d.yaml")
    with pytest.raises(ConfigError, match="given twice: n"):
        parse_config({"streams": [{"name": "n", "pack": "p", "harness": "h", "tasks": ["a"],
                                   "short_baseline": True}] * 2}, "d.yaml")
    with pytest.raises(ConfigError, match="no drift configuration at"):
        load_config(tmp_path / "missing.yaml")
    path.write_text("streams: [\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(path)


def test_paths_are_relative_to_the_config_file(tmp_path):
    (tmp_path / "packs" / "p").mkdir(parents=True)
    path = tmp_path / "drift.yaml"
    path.write_text("store: db/x.db\nstreams:\n  - {name: n, pack: packs/p, harness: h, tasks: [a], "
                    "short_baseline: true}\n")
    config = load_config(path)
    assert config.store == str(tmp_path / "db" / "x.db") and config.streams[0].pack == str(tmp_path / "packs" / "p")
    assert config.alerts_folder == tmp_path / "db" / "drift-alerts"
    url = parse_config({"store": "postgresql://u@h/db", "streams": [{"name": "n", "pack": "p", "harness": "h",
                                                                     "tasks": ["a"], "short_baseline": True}]},
                       "d.yaml", tmp_path)
    assert url.store == "postgresql://u@h/db"


def test_the_most_severe_exit_code_wins():
    assert alerts.exit_code([]) == 0
    assert alerts.exit_code([0, 3]) == 3
    assert alerts.exit_code([3, 1, 0]) == 1
    assert alerts.exit_code([1, 11, 3]) == 11
    assert alerts.exit_code([11, 10, 1]) == 10


def test_the_alert_file_is_written_atomically_and_on_alert_reads_it(tmp_path):
    doc = alerts.alert_document("2026-01-05", [{"stream": "n", "day": "2026-01-05", "kind": "drift", "p0": 0.5}], 10)
    target = tmp_path / "alerts" / "2026-01-05.json"
    alerts.write_alert_file(target, doc)
    alerts.write_alert_file(target, doc)  # overwritten, no temporary file left
    assert json.loads(target.read_text())["alerts"][0]["kind"] == "drift"
    assert sorted(p.name for p in target.parent.iterdir()) == ["2026-01-05.json"]
    got = tmp_path / "got.json"
    command = f"{sys.executable} -c \"import sys; open({str(got)!r}, 'w').write(sys.stdin.read())\""
    assert alerts.run_on_alert(command, doc) is None
    assert json.loads(got.read_text())["exit_code"] == 10
    assert alerts.run_on_alert("exit 4", doc) == "exited with 4"
