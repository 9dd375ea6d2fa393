"""The work directory's patch of a Harbor trial (pure): paths from the engine's diff, text line by line, binary
and oversized files named, folders left out."""

from __future__ import annotations

from evalharness.sources.harbor.run.workdiff import MAX_FILE, unified_patch, workdir_paths


def test_paths_under_the_work_directory_only_and_each_kind_diffed():
    engine = [{"Path": "/app", "Kind": 0}, {"Path": "/app/a.py", "Kind": 0}, {"Path": "/app/new.txt", "Kind": 1},
              {"Path": "/app/gone.txt", "Kind": 2}, {"Path": "/usr/bin/python3", "Kind": 0},
              {"Path": "/application/x", "Kind": 1}, {"Path": "/app/sub", "Kind": 1}, {"Path": "/app/b.bin", "Kind": 0}]
    changed = workdir_paths(engine, "/app/")
    assert [p for p, _ in changed] == ["/app/a.py", "/app/b.bin", "/app/gone.txt", "/app/new.txt", "/app/sub"]
    before = {"/app/a.py": b"x = 1\n", "/app/gone.txt": b"bye\n", "/app/b.bin": b"\0\1"}
    after = {"/app/a.py": b"x = 2", "/app/new.txt": b"hi\n", "/app/b.bin": b"\0\2"}
    patch = unified_patch(changed, before.get, after.get, "/app")
    assert ("diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
            "\\ No newline at end of file\n") in patch
    assert "new file mode 100644\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hi\n" in patch
    assert "deleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n" in patch
    assert "Binary files a/b.bin and b/b.bin differ\n" in patch and "sub" not in patch  # a folder has no bytes
    big = unified_patch([("/app/big.txt", 1)], {}.get, {"/app/big.txt": b"a\n" * MAX_FILE}.get, "/app")
    assert big.endswith("Binary files a/big.txt and b/big.txt differ\n")  # named, not shown
    assert unified_patch([("/app/a.py", 0)], before.get, {"/app/a.py": b"x = 1\n"}.get, "/app") == ""
