#!/bin/sh
# Rebuild a task's work tree from what its image stores (written by prepare_task.sh):
#   /opt/evalharness/base.git        the base commit, one pack
#   /opt/evalharness/seed-rest.tar   what the commit does not hold: ignored files, empty folders, nested repositories
#   /opt/evalharness/seed-stat       modification time and mode of every path of the tree (NUL-separated)
# Usage: evalharness-rebuild-tree DIR [OWNER]  (DIR empty or absent; OWNER uid:gid the tree is given to).
# Run by root when a sandbox starts (into its tmpfs, for the agent) and once when the image is built (into
# a scratch folder, compared with the tree it stands for).
# The result is a one-commit repository whose objects are borrowed from base.git, holding the commit's
# bytes verbatim: no attribute of the tree converts, filters or expands them (as the grader reads them).
set -eu
w="$1" owner="${2:-}"
store=/opt/evalharness
mkdir -p "$w"
git init -q "$w"
git -C "$w" symbolic-ref HEAD refs/heads/main
echo "$store/base.git/objects" > "$w/.git/objects/info/alternates"
git -C "$w" update-ref refs/heads/main "$(cat /etc/evalharness/base_commit)"
echo '* -text -crlf -eol -filter -ident -working-tree-encoding' > "$w/.git/info/attributes"
git -C "$w" reset -q --hard
tar -C "$w" -xpf "$store/seed-rest.tar" --numeric-owner
if [ -n "$owner" ]; then chown -R "$owner" "$w"; fi
# times and modes as the tree had them (a build tool compares source and output times), set last: any
# change of owner or mode after it would make git read every file again
python3 -c '
import os, sys, time
os.chdir(sys.argv[1])
latest = 0
for record in open(sys.argv[2], "rb").read().split(b"\0"):
    if record:
        when, mode, path = record.split(b" ", 2)
        seconds, _, fraction = when.partition(b".")
        ns = int(seconds) * 10 ** 9 + int(fraction[:9].ljust(9, b"0"))
        latest = max(latest, ns)
        try:
            if not os.path.islink(path):
                os.chmod(path, int(mode, 8))
            os.utime(path, ns=(ns, ns), follow_symlinks=False)
        except OSError:
            pass
# an index written in the second a file was last changed leaves that file "racily clean": git reads it
# again, with the attributes of the tree, and may call it modified; so a tree for an agent (an owner given)
# gets its index a second later (the build-time check compares files only)
if sys.argv[3]:
    time.sleep(max(0.0, latest / 1e9 + 1.05 - time.time()))
' "$w" "$store/seed-stat" "$owner"
# the index learns the restored times, so the agent's own git (which applies the tree's attributes) finds
# every file unchanged without reading it
git -C "$w" update-index -q --refresh
rm -f "$w/.git/info/attributes"
if [ -n "$owner" ]; then chown -R "$owner" "$w/.git"; fi
