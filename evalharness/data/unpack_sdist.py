"""Unpack the one sdist in DIR into DEST (its top folder's contents), checking sha256 when given.

Run inside the image build: python3 unpack_sdist.py DIR DEST [SHA256]
"""
import hashlib
import pathlib
import shutil
import sys
import tempfile

src, dest = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
expected = sys.argv[3] if len(sys.argv) > 3 else ""
archives = [p for p in src.iterdir() if p.name.endswith((".tar.gz", ".zip", ".tar.bz2", ".tgz"))]
if len(archives) != 1:
    sys.exit(f"expected one sdist in {src}, found {[p.name for p in src.iterdir()]}")
digest = hashlib.sha256(archives[0].read_bytes()).hexdigest()
if expected and digest != expected:
    sys.exit(f"sha256 mismatch for {archives[0].name}: expected {expected}, got {digest}")
with tempfile.TemporaryDirectory() as tmp:
    shutil.unpack_archive(str(archives[0]), tmp)
    entries = list(pathlib.Path(tmp).iterdir())
    top = entries[0] if len(entries) == 1 and entries[0].is_dir() else pathlib.Path(tmp)
    dest.mkdir(parents=True, exist_ok=True)
    for item in top.iterdir():
        shutil.move(str(item), dest / item.name)
print(f"unpacked {archives[0].name} (sha256 {digest}) into {dest}")
