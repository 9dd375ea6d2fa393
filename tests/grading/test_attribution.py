"""Which lines the patch wrote, as the launcher's audit hook attributes events: pure, no Docker."""

from evalharness.grading.attribution import WHOLE_FILE, written_lines

PATCH = b"""diff --git a/calc/__init__.py b/calc/__init__.py
index 1..2 100644
--- a/calc/__init__.py
+++ b/calc/__init__.py
@@ -1,4 +1,5 @@
 def clamp(v, lo, hi):
-    if v > hi:
+    if v >= hi:
+        import gc
         return hi
     return v
@@ -10,2 +11,3 @@ def mean(values):
     x = 1
+    y = 2
     return x
\\ No newline at end of file
diff --git a/calc/new.py b/calc/new.py
new file mode 100644
--- /dev/null
+++ b/calc/new.py
@@ -0,0 +1,2 @@
+import gc
+gc.get_objects()
diff --git a/calc/gone.py b/calc/gone.py
deleted file mode 100644
--- a/calc/gone.py
+++ /dev/null
@@ -1 +0,0 @@
-x = 1
"""


def test_changed_files_give_the_new_line_numbers_of_added_lines_only():
    lines = written_lines(PATCH, {"calc/__init__.py": "M", "calc/new.py": "A", "calc/gone.py": "D"})
    assert lines == {"calc/__init__.py": [2, 3, 12], "calc/new.py": WHOLE_FILE}


def test_a_changed_file_whose_hunks_cannot_be_found_counts_whole():
    assert written_lines(b"garbage", {"calc/x.py": "M"}) == {"calc/x.py": WHOLE_FILE}


def test_a_pure_deletion_hunk_writes_no_line():
    patch = b"--- a/f.py\n+++ b/f.py\n@@ -3,1 +2,0 @@\n-gone = 1\n"
    assert written_lines(patch, {"f.py": "M"}) == {"f.py": []}
