#!/bin/bash
# Make the task's starting point: one commit, no history beyond it and no remotes (an agent cannot
# read future commits), stored as small as it can be.
# Usage: prepare_task.sh [UPSTREAM_COMMIT]  (reads /tmp/evalharness-task/defect.diff when present)
#
# The task layer keeps the work tree as one packed commit plus what git does not track, never as files:
#   /opt/evalharness/base.git       the commit, one pack (root's, read-only at run time: the grader's copy,
#                                   and the objects the agent's .git borrows)
#   /opt/evalharness/seed-rest.tar  the work tree's ignored files (build output: egg-info, generated
#                                   versions, compiled modules), its empty folders, and /home/agent
#   /etc/evalharness/base_commit    the commit's id
# The work tree folder itself is emptied (one whiteout in the layer, whatever the environment held there:
# a later commit, its history). A sandbox rebuilds the tree in its tmpfs when it starts (sandbox/docker.py).
set -euo pipefail
work="${EVALHARNESS_WORKDIR:-/testbed}"
cd "$work"
git config --system --add safe.directory '*'
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
git init -q
git symbolic-ref HEAD refs/heads/main
git add -A
git commit -q --no-verify -m "task base${upstream:+ (upstream $upstream)}"
mkdir -p /etc/evalharness /opt/evalharness
git rev-parse HEAD > /etc/evalharness/base_commit
chmod 644 /etc/evalharness/base_commit
rm -rf /opt/evalharness/base.git /opt/evalharness/seed.tar
git clone -q --bare --no-local --no-hardlinks . /opt/evalharness/base.git
git -C /opt/evalharness/base.git config --unset remote.origin.url || true
rm -rf /opt/evalharness/base.git/hooks /opt/evalharness/base.git/config.worktree
# What the commit does not hold: ignored files (whole ignored folders as one entry) and empty folders.
rest=$(mktemp)
{ git ls-files -z --others --ignored --exclude-standard --directory
  find . -mindepth 1 -path ./.git -prune -o -type d -empty -printf '%P\0'
} | while IFS= read -r -d '' path; do printf '%s\0' "${work#/}/${path%/}"; done > "$rest"
[ -d /home/agent ] && printf '%s\0' home/agent >> "$rest"
tar -C / --numeric-owner --null -T "$rest" -cf /opt/evalharness/seed-rest.tar
rm -f "$rest"
chmod 644 /opt/evalharness/seed-rest.tar
chmod -R go-w /opt/evalharness
rm -rf /tmp/evalharness-task
cd /
rm -rf "$work"
mkdir -p "$work"
chown agent:agent "$work"
