"""The patch is data the grader derives from the work tree, byte for byte, whatever the agent did
to its own git; a change over the cap is an outcome, never a cut.

Pins issue 7, class 5: the patch came from `git diff` inside the agent's container, honouring its
`diff.external`, textconv and attributes; non-UTF-8 bytes became U+FFFD; a 5 MB fixture was cut.
"""

from __future__ import annotations

import pytest

from evalharness.grading.extract import extract_patch
from evalharness.types import Outcome

pytestmark = pytest.mark.docker

SABOTAGE = """
cat > /tmp/ext.sh <<'EOF'
#!/bin/sh
echo 'diff --git a/.git/hooks/post-checkout b/.git/hooks/post-checkout'
EOF
chmod +x /tmp/ext.sh
git config diff.external /tmp/ext.sh
git config filter.evil.clean 'sed s/high/value/'
printf '* filter=evil\\n*.py diff=evil\\n' > .gitattributes
git config diff.evil.textconv 'echo forged'
git config diff.mnemonicPrefix true
printf '#!/bin/sh\\n' > .git/hooks/pre-commit
"""


def test_the_agents_git_configuration_shapes_nothing(tinypack, sandbox_factory):
    task = tinypack.task("tiny-clamp")
    box = sandbox_factory(tinypack, task)
    assert box.exec(SABOTAGE).exit_code == 0
    assert box.exec("sed -i 's/        return value$/        return high/' calc/__init__.py && "
                    "printf 'caf\\xe9\\n' > calc/latin1.txt && head -c 3000 /dev/urandom > calc/blob.bin").exit_code == 0
    derived = extract_patch(box)
    assert derived.outcome is None, derived.reason
    assert b"diff --git a/calc/__init__.py b/calc/__init__.py" in derived.patch  # a/ b/, not c/ i/
    assert b"+        return high" in derived.patch and b"forged" not in derived.patch
    assert b".git/hooks" not in derived.patch
    assert b"caf\xe9" in derived.patch  # bytes kept: no U+FFFD
    assert b"GIT binary patch" in derived.patch
    assert {"config diff.external", "config filter.evil.clean", "hook pre-commit"} <= set(derived.agent_git)


def test_a_broken_or_deleted_git_folder_does_not_stop_the_grader(tinypack, sandbox_factory):
    task = tinypack.task("tiny-clamp")
    box = sandbox_factory(tinypack, task)
    box.exec("sed -i 's/        return value$/        return high/' calc/__init__.py && rm -rf .git "
             "&& chmod 000 calc/__init__.py")
    derived = extract_patch(box)
    assert derived.outcome is None and b"+        return high" in derived.patch


def test_a_change_over_the_cap_is_patch_too_large(tinypack, sandbox_factory):
    task = tinypack.task("tiny-clamp")
    box = sandbox_factory(tinypack, task)
    box.exec("head -c 300000 /dev/urandom > calc/fixture.bin")
    small = extract_patch(box, max_bytes=100_000)
    assert small.outcome is Outcome.PATCH_TOO_LARGE and "over the cap of 100000 bytes" in small.reason
    assert extract_patch(box, max_bytes=1_000_000).outcome is None
