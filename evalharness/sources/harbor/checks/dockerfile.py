"""A Dockerfile read as instructions with line numbers (pure; for the static checks).

Continuation lines are joined (the instruction keeps its first line's number), comments and parser
directives dropped; ``RUN`` bodies in shell form are read by ``shell.commands`` with their real line numbers,
exec form (a JSON list) as one command.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from evalharness.sources.harbor.checks.shell import Command, commands

_INSTRUCTION = re.compile(r"^\s*([A-Za-z]+)\s*(.*)$", re.DOTALL)


@dataclass
class Instruction:
    keyword: str
    """Upper case: FROM, RUN, COPY, ..."""
    value: str
    line: int
    text: str
    """The source line as written (its first line when continued), for evidence."""


@dataclass
class From:
    image: str
    platform: str | None
    alias: str | None
    line: int


def instructions(text: str) -> list[Instruction]:
    found, buf, start = [], [], 0
    lines = text.splitlines()
    for number, raw in enumerate(lines, 1):
        stripped = raw.strip()
        if not buf and (not stripped or stripped.startswith("#")):
            continue
        if buf and stripped.startswith("#"):
            continue  # a comment inside a continued instruction is dropped by Docker too
        if not buf:
            start = number
        buf.append(raw)
        if stripped.endswith("\\"):
            continue
        match = _INSTRUCTION.match("\n".join(buf))
        if match:
            found.append(Instruction(match.group(1).upper(), match.group(2), start, lines[start - 1].strip()))
        buf = []
    return found


def froms(text: str) -> list[From]:
    return [_from(ins) for ins in instructions(text) if ins.keyword == "FROM"]


def _from(ins: Instruction) -> From:
    words = ins.value.split()
    flags = [w for w in words if w.startswith("--")]
    rest = [w for w in words if not w.startswith("--")]
    platform = next((f.split("=", 1)[1] for f in flags if f.startswith("--platform=")), None)
    alias = rest[2] if len(rest) >= 3 and rest[1].lower() == "as" else None
    return From(rest[0] if rest else "", platform, alias, ins.line)


def run_commands(source: str | list[Instruction]) -> list[Command]:
    """Every command the ``RUN`` instructions run (of a Dockerfile's text or some of its instructions), with
    its line in the Dockerfile."""
    found = []
    for ins in instructions(source) if isinstance(source, str) else source:
        if ins.keyword != "RUN":
            continue
        body = re.sub(r"^(--[a-z-]+(=\S*)?\s+)*", "", ins.value)  # RUN --mount=... flags
        if body.lstrip().startswith("["):
            try:
                argv = json.loads(body)
                found.append(Command(words=[str(a) for a in argv], line=ins.line))
                continue
            except ValueError:
                pass
        for cmd in commands(body):
            cmd.line += ins.line - 1
            found.append(cmd)
    return found


def final_stage(text: str) -> list[Instruction]:
    """The instructions that make the final image: its stage and, through ``FROM <alias>``, the stages it
    builds on (their installs are in the image; other stages' are not)."""
    stages: list[tuple[From, list[Instruction]]] = []
    for ins in instructions(text):
        if ins.keyword == "FROM":
            stages.append((_from(ins), []))
        if stages:
            stages[-1][1].append(ins)
    if not stages:
        return []
    by_alias = {f.alias: (f, body) for f, body in stages if f.alias}
    chain, (head, body), seen = [], stages[-1], set()
    while True:
        chain = body + chain
        if head.image not in by_alias or head.image in seen:
            return chain
        seen.add(head.image)
        head, body = by_alias[head.image]


def base_image(stage: list[Instruction]) -> str:
    """The image the final stage starts from (the first FROM of its chain)."""
    first = next((ins for ins in stage if ins.keyword == "FROM"), None)
    return _from(first).image if first else ""


def read(path: Path | None) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path and path.is_file() else ""
