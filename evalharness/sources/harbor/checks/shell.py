"""A shell script read as simple commands with their line numbers (pure; for the static checks).

Not a shell: enough of POSIX sh to name what a test.sh, solve.sh or a Dockerfile ``RUN`` line runs.
Quotes (across lines too), comments, backslash continuations, ``$(...)`` kept inside a word, redirections,
here-documents (their body is data, never commands) and the lists ``&&``, ``||``, ``;``, ``|``, ``&``.
Each command records whether it runs conditionally (inside ``if``/``case``/a loop, or beside ``&&``/``||``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_OPERATORS = ("&&", "||", ";;", "<<-", "<<", ">>", "&>", "2>", ";", "|", "&", "(", ")", "<", ">")
_REDIRECTS = {"<", ">", ">>", "&>", "2>"}
_OPENERS = {"if", "case", "while", "until", "for", "select"}
_CLOSERS = {"fi", "esac", "done"}
_KEYWORDS = {"then", "else", "elif", "do", "!", "{", "}", "in"}
_PREFIXES = {"sudo", "env", "exec", "time", "command", "nohup", "xargs"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass
class Command:
    """One simple command: its words (quotes removed), where it starts, and what it writes."""

    words: list[str]
    line: int
    redirects: list[tuple[str, str]] = field(default_factory=list)
    heredoc: str | None = None
    conditional: bool = False
    piped_to: list[str] = field(default_factory=list)
    """The command words of what this one's output is piped into (``curl ... | sh`` -> ["sh"])."""

    @property
    def name(self) -> str:
        """The program run, without its directory (``/opt/venv/bin/pip`` is ``pip``): leading assignments,
        ``sudo``/``env``-style prefixes and keywords skipped."""
        args = self.args
        return args[0].rsplit("/", 1)[-1] if args else ""

    @property
    def by_path(self) -> bool:
        """The program is named by a path (``/opt/venv/bin/pytest``, ``./run``), not looked up on PATH."""
        args = self.args
        return bool(args) and "/" in args[0]

    @property
    def args(self) -> list[str]:
        """The words from the program on."""
        words, after_prefix = list(self.words), False
        while words:
            w = words[0]
            if w in _KEYWORDS or w in ("if", "while", "until") or _ASSIGNMENT.match(w) or (after_prefix and w.startswith("-")):
                words.pop(0)
            elif w in _PREFIXES:
                words.pop(0)
                after_prefix = True
            else:
                break
        return words


def errexit(cmds: list[Command]) -> Command | None:
    """The ``set -e`` (``set -euo pipefail``, ``set -o errexit``) that makes a failing command end the script."""
    for cmd in cmds:
        if cmd.name == "set" and any(re.fullmatch(r"-[a-zA-Z]*e[a-zA-Z]*", a) or a == "errexit" for a in cmd.args[1:]):
            return cmd
    return None


@dataclass
class _Token:
    text: str
    line: int
    operator: bool = False
    body: bool = False
    """A here-document's body (data for the command that opened it)."""


def commands(text: str) -> list[Command]:
    """The simple commands of a script, in order."""
    found: list[Command] = []
    current: Command | None = None
    depth = 0
    last_op = ""
    pending_redirect = ""
    pending_heredoc: list[Command] = []
    tokens = list(_tokens(text))
    for i, tok in enumerate(tokens):
        if tok.body:
            if pending_heredoc:
                pending_heredoc.pop(0).heredoc = tok.text
            continue
        if tok.operator and tok.text in _REDIRECTS:
            pending_redirect = tok.text
            continue
        if tok.operator and tok.text in ("<<", "<<-"):
            pending_redirect = "<<"
            continue
        if tok.operator:
            if current is not None:
                if tok.text in ("&&", "||"):
                    current.conditional = True
                if tok.text == "|" and i + 1 < len(tokens):
                    current.piped_to = _next_words(tokens, i + 1)
            if tok.text in ("\n", ";", "&&", "||", "|", "&", ";;", "(", ")"):
                current = None
                last_op = tok.text
            continue
        if pending_redirect:
            if current is not None:
                if pending_redirect == "<<":
                    pending_heredoc.append(current)
                else:
                    current.redirects.append((pending_redirect, tok.text))
            pending_redirect = ""
            continue
        if current is None:
            word = tok.text
            if word in _CLOSERS:
                depth = max(0, depth - 1)
                continue
            if word in _OPENERS:
                depth += 1
            current = Command(words=[], line=tok.line, conditional=depth > 0 or last_op in ("&&", "||"))
            found.append(current)
        current.words.append(tok.text)
    return found


def _next_words(tokens: list[_Token], start: int) -> list[str]:
    words = []
    for tok in tokens[start:]:
        if tok.operator:
            break
        words.append(tok.text)
    return words


def _tokens(text: str):
    """Words and operators with line numbers; a newline is the operator ``\\n``; each here-document's body
    is one ``body`` token after the newline that ends its command line."""
    i, line, n = 0, 1, len(text)
    word, word_line, quoted = [], 1, False
    delimiters: list[tuple[str, bool]] = []

    def flush():
        nonlocal word, quoted
        if word or quoted:
            yield _Token("".join(word), word_line)
        word, quoted = [], False

    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n:
            if text[i + 1] == "\n":
                i, line = i + 2, line + 1
                continue
            if not word:
                word_line = line
            word.append(text[i + 1])
            i += 2
            continue
        if c in "'\"":
            end = _closing_quote(text, i)
            if not word:
                word_line = line
            word.append(text[i + 1:end])
            quoted = True
            line += text.count("\n", i, end)
            i = end + 1
            continue
        if c == "$" and text.startswith("$(", i):
            end = _closing_paren(text, i + 1)
            if not word:
                word_line = line
            word.append(text[i:end + 1])
            line += text.count("\n", i, end)
            i = end + 1
            continue
        if c == "#" and not word:
            while i < n and text[i] != "\n":
                i += 1
            continue
        if c in " \t":
            yield from flush()
            i += 1
            continue
        if c == "\n":
            yield from flush()
            yield _Token("\n", line, operator=True)
            i, line = i + 1, line + 1
            for delim, strip in delimiters:
                body, i, line = _read_heredoc(text, i, line, delim, strip)
                yield _Token(body, line, body=True)
            delimiters = []
            continue
        op = next((o for o in _OPERATORS if text.startswith(o, i)), None)
        if op:
            yield from flush()
            yield _Token(op, line, operator=True)
            i += len(op)
            if op in ("<<", "<<-"):
                delim, i = _heredoc_delimiter(text, i)
                delimiters.append((delim, op == "<<-"))
                yield _Token(delim, line)
            continue
        if not word:
            word_line = line
        word.append(c)
        i += 1
    yield from flush()


def _closing_quote(text: str, start: int) -> int:
    q, i = text[start], start + 1
    while i < len(text):
        if text[i] == "\\" and q == '"':
            i += 2
            continue
        if text[i] == q:
            return i
        i += 1
    return len(text)


def _closing_paren(text: str, start: int) -> int:
    depth, i = 0, start
    while i < len(text):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return len(text) - 1


def _heredoc_delimiter(text: str, i: int) -> tuple[str, int]:
    while i < len(text) and text[i] in " \t":
        i += 1
    m = re.match(r"""(['"]?)([^\s'";&|<>()]+)\1""", text[i:])
    if not m:
        return "", i
    return m.group(2), i + m.end()


def _read_heredoc(text: str, i: int, line: int, delim: str, strip: bool) -> tuple[str, int, int]:
    body = []
    while i < len(text):
        end = text.find("\n", i)
        end = len(text) if end < 0 else end
        raw = text[i:end]
        i, line = end + 1, line + 1
        if (raw.lstrip("\t") if strip else raw) == delim:
            break
        body.append(raw)
    return "\n".join(body), i, line
