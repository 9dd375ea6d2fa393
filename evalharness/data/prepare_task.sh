#!/bin/bash
# Make the task's starting point: one commit, no history beyond it and no remotes (an agent cannot
# read future commits), stored as small as it can be.
# Usage: prepare_task.sh [UPSTREAM_COMMIT]  (runs /tmp/evalharness-task/task_setup.sh, then applies
# /tmp/evalharness-task/defect.diff, when present)
#
# The task layer keeps the work tree as one packed commit plus what git does not track, never as files:
#   /opt/evalharness/base.git        the commit, one pack (root's, read-only at run time: the grader's copy,
#                                    and the objects the agent's .git borrows)
#   /opt/evalharness/seed-rest.tar   the tree's ignored files (build output: egg-info, generated versions,
#                                    compiled modules), empty folders and nested repositories
#   /opt/evalharness/seed-stat       every path's modification time and mode
#   /opt/evalharness/seed-home.tar   /home/agent
#   /etc/evalharness/base_commit     the commit's id
# The work tree folder itself is emptied (one whiteout in the layer, whatever the environment held there:
# a later commit, its history). A sandbox rebuilds the tree in its tmpfs when it starts
# (evalharness-rebuild-tree); it is rebuilt once here and compared, so a tree that cannot be rebuilt
# exactly is the task's error at build time, never a sandbox failure later.
set -euo pipefail
work="${EVALHARNESS_WORKDIR:-/testbed}"
store=/opt/evalharness
cd "$work"
git config --system --add safe.directory '*'
upstream="${1:-}"
# A recipe defect prints one line marked "evalharness-task-error:" (see sandbox/build_failures.py).
if [ -n "$upstream" ] && ! err=$(git -c advice.detachedHead=false checkout -q --force "$upstream" 2>&1); then
  echo "$err"; echo "evalharness-task-error: base_commit $upstream cannot be checked out: ${err%%$'\n'*}"; exit 1
fi
# environment.task_setup: the environment made to match this commit (e.g. the project installed again from
# its own files), before the defect; a failure is the pack's (or the network's: build_failures.py reads the output)
if [ -s /tmp/evalharness-task/task_setup.sh ] && ! (cd "$work" && bash /tmp/evalharness-task/task_setup.sh); then
  echo "error: environment.task_setup failed at base commit ${upstream:-HEAD}"; exit 1
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
# the files' bytes verbatim: no attribute of the tree converts or filters them on the way in
echo '* -text -crlf -eol -filter -ident -working-tree-encoding' > .git/info/attributes
git -c advice.addEmbeddedRepo=false add -A  # a nested repository: a warning, and it goes to seed-rest.tar
rm -f .git/info/attributes
git commit -q --no-verify -m "task base${upstream:+ (upstream $upstream)}"
mkdir -p /etc/evalharness "$store"
git rev-parse HEAD > /etc/evalharness/base_commit
chmod 644 /etc/evalharness/base_commit
rm -rf "$store/base.git" "$store/seed.tar"
git clone -q --bare --no-local --no-hardlinks . "$store/base.git"
git -C "$store/base.git" config --unset remote.origin.url || true
rm -rf "$store/base.git/hooks" "$store/base.git/config.worktree"
# What the commit does not hold: ignored files (an ignored folder as one entry), empty folders, and
# repositories nested in the tree (the commit records only their commit id).
rest=$(mktemp)
{ git ls-files -z --others --ignored --exclude-standard --directory
  find . -mindepth 1 -name .git -prune -o -type d -empty -printf '%P\0'
  git ls-files -z --stage | while IFS= read -r -d '' entry; do
    if [ "${entry%% *}" = 160000 ]; then printf '%s\0' "${entry#*$'\t'}"; fi
  done
} > "$rest"
tar -C "$work" --numeric-owner --null -T "$rest" -cf "$store/seed-rest.tar"
find . -depth -mindepth 1 ! -path ./.git ! -path './.git/*' -printf '%T@ %m %P\0' > "$store/seed-stat"
rm -f "$rest"
# (a work tree inside home is the tree's business: rebuilt, not stored twice)
if [ -d /home/agent ]; then
  tar -C / --numeric-owner --anchored --no-wildcards --exclude="${work#/}" -cf "$store/seed-home.tar" home/agent
fi
chmod 644 "$store"/seed-*
chmod -R go-w "$store"
# The tree must come back exactly from what is stored: rebuild it once and compare.
check=$(mktemp -d)
if ! err=$(evalharness-rebuild-tree "$check/tree" 2>&1) \
   || ! err=$(diff -rq --no-dereference -x .git "$work" "$check/tree" 2>&1); then
  echo "$err"; echo "evalharness-task-error: the work tree cannot be rebuilt from its packed commit: ${err%%$'\n'*}"; exit 1
fi
rm -rf "$check" /tmp/evalharness-task
cd /
rm -rf "$work"
mkdir -p "$work"
chown agent:agent "$work"
