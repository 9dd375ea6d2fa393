#!/bin/bash
# Make /testbed a repository with exactly one commit: the task's starting point.
# Usage: prepare_task.sh [UPSTREAM_COMMIT]  (reads /tmp/evalharness-task/defect.diff when present)
# No history beyond that commit and no remotes: an agent cannot read future commits.
set -euo pipefail
cd "${EVALHARNESS_WORKDIR:-/testbed}"
upstream="${1:-}"
# A recipe defect prints one line marked "evalharness-task-error:" (see sandbox/build_failures.py).
if [ -n "$upstream" ] && ! err=$(git -c advice.detachedHead=false checkout -q --force "$upstream" 2>&1); then
  echo "$err"; echo "evalharness-task-error: base_commit $upstream cannot be checked out: ${err%%$'\n'*}"; exit 1
fi
if [ -s /tmp/evalharness-task/defect.diff ] && ! err=$(git apply --whitespace=nowarn /tmp/evalharness-task/defect.diff 2>&1); then
  echo "$err"; echo "evalharness-task-error: defect_patch does not apply: ${err%%$'\n'*}"; exit 1
fi
rm -rf .git
export GIT_AUTHOR_NAME=evalharness GIT_AUTHOR_EMAIL=evalharness@localhost
export GIT_COMMITTER_NAME=evalharness GIT_COMMITTER_EMAIL=evalharness@localhost
export GIT_AUTHOR_DATE="2000-01-01T00:00:00+0000" GIT_COMMITTER_DATE="2000-01-01T00:00:00+0000"
git init -q -b main
git add -A
git commit -q --no-verify -m "task base${upstream:+ (upstream $upstream)}"
mkdir -p /etc/evalharness
git rev-parse HEAD > /etc/evalharness/base_commit
chmod 644 /etc/evalharness/base_commit
chown -R agent:agent .
git config --system --add safe.directory '*'
rm -rf /tmp/evalharness-task
# The grader's own copy of the base commit's objects: root's, read-only at run time (the root file
# system is mounted read-only), so nothing an agent does to /testbed/.git reaches grading.
rm -rf /opt/evalharness/base.git && mkdir -p /opt/evalharness
git clone -q --bare --no-local --no-hardlinks . /opt/evalharness/base.git
rm -rf /opt/evalharness/base.git/hooks /opt/evalharness/base.git/config.worktree
chmod -R go-w /opt/evalharness
# The seed: work tree and home as they are now, unpacked into size-limited tmpfs when a sandbox starts.
here="$(pwd)"
tar -C / --numeric-owner -cf /opt/evalharness/seed.tar "${here#/}" home/agent
chmod 644 /opt/evalharness/seed.tar
