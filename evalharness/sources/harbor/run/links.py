"""Links the agent left that resolve into what only the verifier holds (/tests, /logs/verifier).

A declared artifact (or any file of a shared verifier's snapshot) that is a symbolic link to /tests/expected.txt
is, in the verifier, the expected answer itself: a test comparing the two passes without the task solved (tested:
it did). The links are resolved in the verifier container (its own ``readlink``, a toolchain the tamper check
already vouched for, or the separate verifier's image) after its volumes are mounted and before the tests run;
one that lands under those folders makes the trial ``tampered``. Only the agent's paths are checked: a link the
task's image ships is the task's.
"""

from __future__ import annotations

import io
import shlex
import tarfile

from evalharness.errors import SandboxError
from evalharness.sources.harbor.run.container import reroot

VERIFIER_ONLY = ("/tests", "/logs/verifier")


def carried_links(tars: list[tuple[str, bytes | None]]) -> list[str]:
    """Pure: the absolute paths of the symbolic links in the tars (``(path, the engine's tar of it)``) carried
    to a separate verifier, as they unpack there."""
    links = []
    for path, data in tars:
        if data is not None:
            with tarfile.open(fileobj=io.BytesIO(reroot(data, path))) as tar:
                links += ["/" + m.name.lstrip("/") for m in tar.getmembers() if m.issym()]
    return links


def link_commands(paths: list[str] | tuple[str, ...], limit: int = 64 * 1024) -> list[str]:
    """Pure: shell commands printing ``path\\0resolved\\0`` for each of ``paths`` that is a symbolic link, each
    command under ``limit`` bytes (one ``bash -c`` argument holds at most 128 KiB)."""
    body = 'do if [ -L "$p" ]; then printf "%s\\0%s\\0" "$p" "$(readlink -f -- "$p")"; fi; done'
    commands, current = [], []
    for quoted in (shlex.quote(p) for p in paths):
        if current and sum(len(q) + 1 for q in current) + len(quoted) + len(body) + 20 > limit:
            commands.append(current)
            current = []
        current.append(quoted)
    return [f"for p in {' '.join(c)}; {body}" for c in [*commands, current] if c]


def into_verifier(output: str) -> list[str]:
    """Pure: ``path -> target`` for each printed pair whose target is a verifier-only folder, under one or above
    one (a link to / reaches /tests through it)."""
    parts = output.split("\0")
    pairs = zip(parts[0::2], parts[1::2])
    return [f"{path} -> {target}" for path, target in pairs if target and any(
        target == f or target.startswith(f + "/") or f.startswith(target.rstrip("/") + "/") for f in VERIFIER_ONLY)]


def links_into_verifier(box, paths: list[str] | tuple[str, ...]) -> list[str]:
    """The agent's ``paths`` that are links into /tests or /logs/verifier in the running verifier ``box``."""
    found = []
    for command in link_commands(paths):
        done = box.exec(command, workdir="/", timeout=120)
        if done.exit_code != 0:
            raise SandboxError(f"could not check the agent's links before verifying: {done.output[:300]}")
        found += into_verifier(done.output)
    return found
