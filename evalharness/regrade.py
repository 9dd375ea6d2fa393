"""Re-grade a stored run from its run folders, without Docker.

Every graded trial folder keeps the test command's output, its JUnit XML and the exit code, so the
decision (parsing + resolution) can be made again, e.g. after a parser fix, and compared with
what was stored. An empty change was never graded (``no_patch`` without a grading container): it is
decided again from its patch.diff. Flags come from the patch and the grading sandbox, which a re-grade does not
repeat, so they are kept; a re-graded outcome that is itself a flag (``tampered``, ...) adds it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from evalharness.errors import UserError
from evalharness.grading.canary import Canaries
from evalharness.grading.grade import decide
from evalharness.grading.verdict import decide_guarded
from evalharness.packs import Pack, load_pack
from evalharness.types import OUTCOME_FLAGS, Outcome

REGRADABLE = {o.value for o in (Outcome.RESOLVED, Outcome.UNRESOLVED, Outcome.NO_PATCH, Outcome.TEST_RUN_ERROR,
                                 Outcome.TAMPERED)}


@dataclass(frozen=True)
class Regrade:
    trial: str
    stored: str
    now: str
    reason: str
    flags: tuple[str, ...] = ()
    """Flags stored in result.json."""
    flags_now: tuple[str, ...] = ()
    """Flags after re-grading: the stored ones, plus the new outcome where it is a flag."""

    @property
    def changed(self) -> bool:
        return self.stored != self.now or self.flags != self.flags_now


def regraded_flags(stored: list[str] | tuple[str, ...], outcome: Outcome) -> tuple[str, ...]:
    """Flags a trial keeps after a re-grade: none is dropped (their evidence is not re-examined), and an
    outcome that is itself a flag is added, so a report counts it whichever way it looks."""
    return tuple(sorted(set(stored) | ({outcome.value} & OUTCOME_FLAGS)))


def regrade_run(run_dir: Path, *, log_parser: str | None = None) -> list[Regrade]:
    """Decide every graded trial of ``run_dir`` again; ``log_parser`` overrides the pack's."""
    manifest = run_dir / "manifest.json"
    if not manifest.is_file():
        raise UserError(f"no run folder at {run_dir}", "give a run id under --runs-dir, or the folder itself")
    pack = _pack(json.loads(manifest.read_text())["pack"])
    results = []
    for result_file in sorted(run_dir.glob("*/*/*/*/seed-*/result.json")):
        result = json.loads(result_file.read_text())
        grade = result.get("grade")
        folder = result_file.parent
        ungraded = result["outcome"] == Outcome.NO_PATCH.value and not grade
        if result.get("reward") is not None:  # a Harbor verifier's reward, kept as it wrote it
            if "verifier_timed_out" not in result["reward"]:  # tampered: never verified, nothing to decide again
                continue
            outcome, reason = _regrade_harbor(result, folder)
        elif not ungraded and (result["outcome"] not in REGRADABLE or not grade or grade.get("test_exit_code") is None):
            continue
        elif ungraded:  # an empty change, decided without a grading container: decided again from patch.diff
            outcome, reason = _regrade_ungraded(result, folder)
        elif grade.get("runner") == "guarded":
            outcome, reason = _regrade_guarded(pack.task(result["task_id"]), grade, folder)
        else:
            junit = folder / "junit.xml"
            outcome, reason, _ = decide(
                pack.task(result["task_id"]), log_parser or pack.spec_for(pack.task(result["task_id"])).log_parser,
                exit_code=grade["test_exit_code"],
                log=(folder / "test_output.txt").read_text(), junit_xml=junit.read_text() if junit.exists() else None,
                patch_applied=grade["patch_applied"], canaries=grade.get("canaries") or [],
                mirrors=grade.get("node_mirrors") or {})
        flags = tuple(sorted(result.get("flags") or ()))
        results.append(Regrade(str(folder.relative_to(run_dir)), result["outcome"], outcome.value, reason,
                               flags, regraded_flags(flags, outcome)))
    return results


def _regrade_harbor(result: dict, folder: Path) -> tuple[Outcome, str]:
    """A Harbor trial's reward files (kept byte for byte in its folder) decided again (sources/harbor/run/reward.py)."""
    from evalharness.sources.harbor.run.reward import attribute, parse_reward, reward_from_dict

    txt, js = folder / "reward.txt", folder / "reward.json"
    found = parse_reward(txt.read_bytes() if txt.is_file() else None, js.read_bytes() if js.is_file() else None,
                         timed_out=bool(result["reward"]["verifier_timed_out"]))
    own_state = result["reward"].get("own_state")  # the verifier on the task's own state, when it was asked
    found = attribute(found, reward_from_dict(own_state) if own_state else None)
    return found.outcome, found.reason


def _regrade_ungraded(result: dict, folder: Path) -> tuple[Outcome, str]:
    """A ``no_patch`` trial that no grading container saw (evalharness.trial.ungraded_outcome): still no_patch
    while its patch.diff is empty; a change found there was never graded, and grading it needs Docker."""
    from evalharness.grading.extract import Extracted
    from evalharness.trial import ungraded_outcome
    from evalharness.types import AgentResult

    patch_file = folder / "patch.diff"
    patch = patch_file.read_bytes() if patch_file.is_file() else b""
    decided = ungraded_outcome(Extracted(patch), AgentResult(exit_status=result.get("exit_status") or "submitted"))
    if decided is None:
        return Outcome.UNRESOLVED, ("patch.diff holds a change that was never graded (stored as no_patch); "
                                    "grading it needs Docker: run the trial again")
    return decided.outcome, decided.reason


def _regrade_guarded(task, grade: dict, folder: Path) -> tuple[Outcome, str]:
    """A guarded run's records decided again: the nonce and canaries were stored with them."""
    records = folder / "results.jsonl"
    if not records.is_file():
        return Outcome.TEST_RUN_ERROR, "results.jsonl is missing from the trial folder"
    ids = grade.get("canaries") or []
    canaries = None
    if len(ids) == 2:
        canaries = Canaries(ids[0].split("::")[0], ids[0], ids[1], grade.get("canary_token", ""), "")
    patched = {a["path"] for a in grade.get("surface", []) if a.get("action") == "applied"}
    verdict = decide_guarded(task, records.read_bytes(), grade.get("nonce", ""), exit_code=grade["test_exit_code"],
                             canaries=canaries, patched_files=patched, workdir=grade.get("workdir", "/testbed"),
                             patch_applied=grade["patch_applied"])
    return verdict.outcome, verdict.reason


def _pack(info: dict) -> Pack:
    pack = load_pack(info["path"])
    if pack.content_hash != info["hash"]:
        raise UserError(f"pack at {info['path']} changed since the run",
                        "re-grading needs the task lists the run was graded with")
    return pack
