"""What a merge review may say: the verdicts, the reasons, the arms (pure data; the store checks every review
against it).

- ``merge``: a maintainer would merge the patch as it is; ``merge_after_changes``: after small changes the
  reviewer would ask for; ``reject``: not mergeable. The merge rate counts ``merge`` only (METR's "would merge");
  ``merge_after_changes`` is reported beside it.
- A reason says why a patch is not merged as is; a ``merge`` verdict gives none.
- ``agent``: a trial's patch; ``gold``: the task's reference patch, mixed in blinded to measure the reviewers' own
  baseline.
"""

from __future__ import annotations

VERDICTS = ("merge", "merge_after_changes", "reject")
ACCEPTED = frozenset({"merge"})
"""Verdicts that count as merged in the merge rate."""
REASONS = {
    "core_functionality": "core functionality wrong",
    "breaks_other_code": "breaks other code",
    "code_quality": "code quality",
    "tests": "tests missing or wrong",
    "out_of_scope": "out of scope",
}
ARMS = ("agent", "gold")
