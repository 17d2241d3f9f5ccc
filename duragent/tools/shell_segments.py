"""Split a bash command into the simple commands it would run, for policy matching.

A policy pattern such as ``bash:ls *`` is meant to allow *listing*, not "any text that starts
with ls". Matched against the whole command it would let ``ls; rm -rf /`` through, so the
policy matches each simple command (a *segment*) on its own. This is not a bash parser: it is
a conservative tokenizer whose one job is never to hide a command inside another segment.
Where bash is richer than this splitter, it errs towards *more* segments (each must then be
allowed) or towards declaring the command unanalysable, never towards fewer segments.

Rules:

- Separators: unquoted ``;``, ``&&``, ``||``, ``|``, ``|&``, ``&`` and newlines.
- ``$( … )``, ``<( … )``, ``>( … )``, backticks and bare ``( … )`` subshells are split
  recursively; their commands are segments of their own. A substitution also stays in the text
  of its surrounding segment (``echo $(date)`` is matched as a whole *and* ``date`` must be
  allowed); a bare subshell's text is removed from the segment around it.
- ``'…'``, ``$'…'``, ``"…"`` and backslash escapes are respected: separators inside them do not
  split. Substitutions inside double quotes and unquoted here-documents still run in bash, so
  they are still split out. ``$(( … ))`` arithmetic is kept whole.
- Comments (an unquoted ``#`` starting a word) are dropped up to the end of the line, as bash
  does. Getting this wrong would matter: ``ls # it's`` would otherwise open a quote.
- Here-document bodies are skipped up to their delimiter line (unquoted ones are searched for
  substitutions), but only when bash would read them at that point: a body that crosses a
  ``$( … )`` boundary makes the command unanalysable, because bash then runs those lines.
- Leading reserved words (``if``, ``then``, ``do``, ``{``, ``!``, ``time`` …) are dropped from a
  segment, so ``if true; then rm -rf /; fi`` yields ``rm -rf /`` for the deny list to see.
- A segment *redirects output* when it has an unquoted ``>``, ``>>``, ``>|``, ``&>`` or ``<>``
  whose target is a file. Duplicating a descriptor (``2>&1``) and writing to ``/dev/null`` do
  not count: they cannot change a file.
- ``problem`` is set when the command cannot be analysed safely: unbalanced quotes or
  parentheses, an unterminated here-document, function definitions (``f() { …; }`` and
  ``function``), ``coproc``, a ``(`` in the middle of a command (arrays), ``case`` patterns (their
  ``)`` looks unbalanced), absurd nesting. The segments found are still returned so that deny
  patterns can see them: bash runs the complete lines that precede a syntax error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Segment", "SplitResult", "split_command"]

_RESERVED = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until"})
_RESERVED |= {"esac", "!", "{", "}", "time"}
_UNANALYSABLE_FIRST_WORD = {"function": "defines a shell function", "coproc": "uses coproc"}
_END = r"(?=$|[\s;&|()<>])"
_FD_DUP = re.compile(r"\s*(?:\d+|-)" + _END)
_DEV_NULL = re.compile(r"\s*/dev/null" + _END)
_REDIRECT_OP = re.compile(r"&>>?|>>|>\||>&|>")
_HEREDOC = re.compile(r"<<(-?)[ \t]*((?:[^\s;&|()<>'\"\\]|\\.|'[^']*'|\"[^\"]*\")+)")
_BLANK = " \t"
_FIRST_WORD = re.compile(r"(\S+)(?:\s+|$)")


@dataclass(frozen=True, slots=True)
class Segment:
    """One simple command, trimmed, as written (substitutions included verbatim)."""

    text: str
    redirects_output: bool = False


@dataclass(frozen=True, slots=True)
class SplitResult:
    """The segments of a command, and why it cannot be analysed safely (None when it can)."""

    segments: tuple[Segment, ...]
    problem: str | None = None


def split_command(command: str) -> SplitResult:
    """Split ``command`` into segments; see the module docstring for the exact rules."""
    try:
        scanner = _split(command)
    except RecursionError:  # thousands of nested "$(": nobody writes that by hand
        return SplitResult((), "nested too deeply to analyse")
    return SplitResult(tuple(scanner.segments), scanner.problem)


def _strip_reserved(text: str) -> str:
    """Drop leading shell keywords so the command they introduce is what gets matched."""
    while (match := _FIRST_WORD.match(text)) is not None and match.group(1) in _RESERVED:
        text = text[match.end() :]
    return text


def _split(text: str, *, expansions_only: bool = False) -> _Scanner:
    scanner = _Scanner(text)
    if expansions_only:
        scanner.expansions(terminator="")
    else:
        scanner.scan_list(closer=None)
    if scanner.heredocs:
        scanner.fail(f"unterminated here-document (no '{scanner.heredocs[0][0]}' line)")
    return scanner


class _Scanner:
    """One left-to-right pass over the text, recursing into nested command lists."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.pos = 0
        self.segments: list[Segment] = []
        self.problem: str | None = None
        self.heredocs: list[tuple[str, bool, bool, int]] = []  # delimiter, quoted, -, depth
        self.depth = 0  # nesting of parenthesised lists; here-documents may not cross it

    def fail(self, why: str) -> None:
        """Record the first reason the command cannot be analysed safely."""
        if self.problem is None:
            self.problem = why

    def _peek(self, offset: int = 1) -> str:
        i = self.pos + offset
        return self.s[i] if i < len(self.s) else ""

    def _merge(self, text: str, *, expansions_only: bool = False) -> None:
        """Split ``text`` on its own (backtick body, here-document) and keep its segments."""
        sub = _split(text, expansions_only=expansions_only)
        self.segments.extend(sub.segments)
        if sub.problem is not None:
            self.fail(sub.problem)

    def scan_list(self, closer: str | None) -> None:
        """Scan commands until ``closer`` (``)``) or the end, emitting their segments."""
        s = self.s
        cur: list[str] = []
        redirect = False
        start = len(self.segments)
        word_start = True

        def emit() -> None:
            nonlocal cur, redirect, start
            text = _strip_reserved("".join(cur).strip())
            if text:
                first = text.split(maxsplit=1)[0]
                if first in _UNANALYSABLE_FIRST_WORD:
                    self.fail(_UNANALYSABLE_FIRST_WORD[first])
                # Outer command first, then what was substituted into it: reads naturally.
                self.segments.insert(start, Segment(text, redirect))
            cur, redirect, start = [], False, len(self.segments)

        while self.pos < len(s):
            c, nxt = s[self.pos], self._peek()
            begin = self.pos
            boundary = False  # does the next character start a new word?
            if c == "#" and word_start:
                end = s.find("\n", self.pos)
                self.pos = len(s) if end < 0 else end
                continue
            if c == "\\":
                self.pos += 2
            elif c == "'":
                self._single_quoted()
            elif c == "$" and nxt == "'":
                self.pos += 1
                self._ansi_c_quoted()
            elif c == '"':
                self.pos += 1
                self.expansions(terminator='"')
            elif c == "`":
                self._backtick()
            elif c == "$" and nxt == "(":
                self._dollar_paren()
            elif c in "<>" and nxt == "(":
                self.pos += 2
                self._nested()
            elif c == "(":
                if _strip_reserved("".join(cur).strip()):
                    empty = s[self.pos + 1 :].lstrip(_BLANK).startswith(")")
                    self.fail("defines a shell function" if empty else "'(' inside a command")
                self.pos += 1
                self._nested()
                word_start = True
                continue  # a bare subshell's text is not part of the surrounding segment
            elif c == ")":
                self.pos += 1
                if closer == ")":
                    emit()
                    return
                self.fail("unbalanced ')'")
                emit()
                word_start = True
                continue
            elif c in ";\n" or c == "|" or (c == "&" and nxt != ">"):
                self.pos += 2 if c + nxt in ("&&", "||", "|&") else 1
                emit()
                if c == "\n":
                    self._heredoc_bodies()
                    start = len(self.segments)
                word_start = True
                continue
            elif s.startswith("<<<", self.pos):  # here-string: an ordinary word follows
                self.pos += 3
                boundary = True
            elif s.startswith("<<", self.pos):
                boundary = self._heredoc_start()
            elif c in "&>":
                redirect |= self._redirect()
                boundary = True
            else:
                self.pos += 2 if c == "<" and nxt == "&" else 1
                boundary = c in _BLANK or c == "<"
            cur.append(s[begin : self.pos])
            word_start = boundary
        if closer is not None:
            self.fail("unbalanced '('")
        emit()

    def _redirect(self) -> bool:
        """Consume a redirection operator; True when it writes to a real file."""
        match = _REDIRECT_OP.match(self.s, self.pos)
        op = match.group(0) if match else self.s[self.pos]
        self.pos += len(op)
        if op == ">&" and _FD_DUP.match(self.s, self.pos):
            return False
        return not _DEV_NULL.match(self.s, self.pos)

    def _nested(self) -> None:
        """Scan a parenthesised list (``$(``, ``<(``, ``(``) up to its ``)``."""
        outer = len(self.heredocs)
        self.depth += 1
        self.scan_list(closer=")")
        self.depth -= 1
        if len(self.heredocs) > outer:  # started inside, but ")" came before its body
            self.fail("here-document crossing a substitution")

    def _heredoc_start(self) -> bool:
        """Consume ``<<[-]WORD`` and queue its body; True if the next char starts a word."""
        match = _HEREDOC.match(self.s, self.pos)
        if match is None:
            self.fail("here-document without a delimiter")
            self.pos += 2
            return True
        word = match.group(2)
        quoted = any(q in word for q in "'\"\\")
        delimiter = re.sub(r"\\(.)|['\"]", r"\1", word)
        self.heredocs.append((delimiter, quoted, match.group(1) == "-", self.depth))
        self.pos = match.end()
        return False

    def _heredoc_bodies(self) -> None:
        """Skip the bodies of the here-documents started on the line just ended."""
        if any(depth != self.depth for *_, depth in self.heredocs):
            # bash reads such a body after the substitution, running these lines: do not skip.
            self.fail("here-document crossing a substitution")
            return
        pending, self.heredocs = self.heredocs, []
        for index, (delimiter, quoted, strip_tabs, _) in enumerate(pending):
            body: list[str] = []
            while True:
                if self.pos >= len(self.s):
                    self.heredocs = pending[index:]  # reported by split_command
                    return
                end = self.s.find("\n", self.pos)
                end = len(self.s) if end < 0 else end
                line = self.s[self.pos : end]
                self.pos = min(end + 1, len(self.s))
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break
                body.append(line)
            if not quoted:
                self._merge("\n".join(body), expansions_only=True)

    def _single_quoted(self) -> None:
        end = self.s.find("'", self.pos + 1)
        if end < 0:
            self.fail("unbalanced quote (')")
            self.pos = len(self.s)
        else:
            self.pos = end + 1

    def _ansi_c_quoted(self) -> None:
        """``$'…'``: unlike plain single quotes, a backslash escapes the next character."""
        self.pos += 1
        while self.pos < len(self.s):
            c = self.s[self.pos]
            self.pos += 2 if c == "\\" else 1
            if c == "'":
                return
        self.fail("unbalanced quote ($')")

    def expansions(self, terminator: str) -> None:
        """Walk double-quoted text up to ``terminator`` ("" = the end), splitting out ``$()``."""
        s = self.s
        while self.pos < len(s):
            c = s[self.pos]
            if c == "\\":
                self.pos += 2
            elif terminator and c == terminator:
                self.pos += 1
                return
            elif c == "`":
                self._backtick()
            elif c == "$" and self._peek() == "(":
                self._dollar_paren()
            else:
                self.pos += 1
        if terminator:
            self.fail(f"unbalanced quote ({terminator})")

    def _backtick(self) -> None:
        """Old-style substitution: unescape one level, then split the inside as a command."""
        s = self.s
        self.pos += 1
        inner: list[str] = []
        while self.pos < len(s):
            c = s[self.pos]
            if c == "\\" and self.pos + 1 < len(s):
                escaped = s[self.pos + 1]
                inner.append(escaped if escaped in "\\`$" else c + escaped)
                self.pos += 2
            elif c == "`":
                self.pos += 1
                break
            else:
                inner.append(c)
                self.pos += 1
        else:
            self.fail("unbalanced backtick (`)")
        self._merge("".join(inner))

    def _dollar_paren(self) -> None:
        """``$( … )`` command substitution, or ``$(( … ))`` arithmetic when it closes as such."""
        begin = self.pos
        if self._peek(2) == "(" and self._arithmetic():
            return
        self.pos = begin + 2
        self._nested()

    def _arithmetic(self) -> bool:
        """Try ``$(( … ))``; on a mismatch rewind, as bash then reads ``$( ( … ) … )``."""
        s, begin, kept = self.s, self.pos, len(self.segments)
        problem, heredocs = self.problem, list(self.heredocs)
        self.pos += 3
        depth = 0
        while self.pos < len(s):
            c = s[self.pos]
            if c == "\\":
                self.pos += 2
            elif c == "'":
                self._single_quoted()
            elif c == '"':
                self.pos += 1
                self.expansions(terminator='"')
            elif c == "`":
                self._backtick()
            elif c == "$" and self._peek() == "(":
                self._dollar_paren()
            elif c == ")" and depth == 0:
                if self._peek() == ")":
                    self.pos += 2
                    return True
                break
            else:
                depth += {"(": 1, ")": -1}.get(c, 0)
                self.pos += 1
        del self.segments[kept:]
        self.pos, self.problem, self.heredocs = begin, problem, heredocs
        return False
