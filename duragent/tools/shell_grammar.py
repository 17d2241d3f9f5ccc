"""Does the policy fully understand a bash command? A fail-closed check with a real grammar.

``shell_segments`` finds every command a line runs, but a word it leaves whole can still run
code later: ``echo ${x:='a[$(touch P)]'} $((x))`` assigns a string in a default value and then
evaluates it as an arithmetic subscript, which runs ``touch``. Finding each such route is a
losing game, so this module inverts the question: a command is *understood* only when every
byte of it belongs to a construct on an allow-list of constructs that provably neither run
code nor write files beyond what the segments and redirect flags already say. Anything else —
arithmetic, ``[[ ]]``, ``(( ))``, parameter operators (``${x:=…}``, ``${x@P}``, ``${!x}``,
``${x[…]}``), arrays, functions, ``case``, ``$"…"``, builtins that evaluate their arguments as
code or variable names (``eval``, ``printf -v``, ``read``, ``unset``, ``test -v`` …), a command
name computed at run time, or whatever the parser could not read — is reported as a reason, and
the policy then asks (``ask``) or refuses (``restrict``).

The parse uses tree-sitter-bash (MIT, C). It is error-tolerant, so any ERROR or MISSING node
means "not understood", and because it is not bash, its tree is trusted only where the text it
accounts for is checked too: every leaf must match a conservative lexical shape, and every byte
between leaves must be plain blanks (or literal text inside a double-quoted string or
here-document, without ``$`` or backticks). Bytes the grammar skipped or mis-read therefore
cannot hide a construct.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

import tree_sitter_bash
from tree_sitter import Language, Node, Parser, Tree

from duragent.tools.shell_segments import Segment

__all__ = ["MAX_ANALYSED_BYTES", "Analysis", "analyse", "unmodelled"]

MAX_ANALYSED_BYTES = 64 * 1024
"""Longer bash commands are not analysed at all (they need approval): parsing and splitting
cost grows with the text, a decision runs on every call, and no hand-written command is this
long. Deny patterns still see the raw text."""

_SEPARATORS = frozenset({";", "&", "&&", "||", "|", "|&", "\n"})
_OUTPUT_OPS = frozenset({">", ">>", "&>", "&>>", ">|", "<>", ">&"})
_REDIRECT_OPS = _OUTPUT_OPS | {"<", "<&", ">&-", "<&-"}
# The anonymous tokens each understood node may contain; a node type missing here is not
# understood at all, whatever it contains.
_TOKENS: dict[str, frozenset[str]] = {
    "program": _SEPARATORS,
    "list": _SEPARATORS,
    "pipeline": frozenset({"|", "|&"}),
    "command": frozenset(),
    "command_name": frozenset(),
    "concatenation": frozenset(),
    "string": frozenset({'"'}),
    "simple_expansion": frozenset({"$"}),
    "expansion": frozenset({"${", "}"}),
    "command_substitution": frozenset({"$(", ")", "`"}),
    "process_substitution": frozenset({"<(", ">(", ")"}),
    "subshell": _SEPARATORS | {"(", ")"},
    "compound_statement": _SEPARATORS | {"{", "}"},
    "negated_command": frozenset({"!"}),
    "redirected_statement": frozenset(),
    "file_redirect": _REDIRECT_OPS,
    "heredoc_redirect": frozenset({"<<", "<<-"}) | _SEPARATORS,
    "heredoc_body": frozenset(),
    "herestring_redirect": frozenset({"<<<"}),
    "variable_assignment": frozenset({"="}),
    "if_statement": _SEPARATORS | {"if", "then", "fi"},
    "elif_clause": _SEPARATORS | {"elif", "then"},
    "else_clause": _SEPARATORS | {"else"},
    "while_statement": _SEPARATORS | {"while", "until"},
    "do_group": _SEPARATORS | {"do", "done"},
    "for_statement": _SEPARATORS | {"for", "in"},
    "brace_expression": frozenset({"{", "..", "}"}),
}
_PLAIN = rb"(?:\\[^\n]|\\\n|[^\s$`'\"();&|<>\\])+"
# The shape each understood leaf must have; bytes the grammar mislabels fail here.
_LEAVES: dict[str, re.Pattern[bytes]] = {
    "word": re.compile(_PLAIN),
    "number": re.compile(_PLAIN),
    "string_content": re.compile(rb"(?:\\[\s\S]|[^$`\\])+"),
    "heredoc_content": re.compile(rb"(?:\\[\s\S]|[^$`\\])*"),
    "raw_string": re.compile(rb"'[^']*'"),
    "ansi_c_string": re.compile(rb"\$'(?:\\[\s\S]|[^'\\])*'"),
    "variable_name": re.compile(rb"[A-Za-z_][A-Za-z0-9_]*|[0-9]+"),
    "special_variable_name": re.compile(rb"[@*#?$!_0-]"),
    "file_descriptor": re.compile(rb"[0-9]+"),
    "heredoc_start": re.compile(rb"[A-Za-z0-9_.-]+|'[A-Za-z0-9_.-]+'|\"[A-Za-z0-9_.-]+\""),
    "heredoc_end": re.compile(rb"[A-Za-z0-9_.-]+"),
    "comment": re.compile(rb"#[^\n]*"),
}
_HEREDOC = re.compile(rb"(?<!<)<<(?!<)")
_HEREDOC_EXPANSIONS = 1000
"""tree-sitter-bash 0.25 parses here-document bodies in time quadratic in their expansions
(64 KiB of ``$x`` takes seconds, 1,000 take ~10 ms): a command with a here-document and more
``$``/backticks than this is not analysed."""
_PARSE_BUDGET_S = 0.5
"""Safety net for other slow inputs: a parse that runs longer is cancelled (not understood)."""
_HEAD = re.compile(rb"[^ \t\n<>&]*")
_CONTROL = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")
_NON_ASCII = re.compile(rb"[\x80-\xff]")
_BLANKS = re.compile(rb"(?:[ \t\n]|\\\n)*")
_LITERAL_GAP = re.compile(rb"(?:\\[\s\S]|[^$`\\])*")  # inside "…" or an unquoted here-document
_QUOTED_BODY = frozenset({"heredoc_body"})  # a leaf only when its delimiter was quoted
# Builtins that evaluate an argument as code, as a variable name (whose subscript is then
# evaluated arithmetically: ``read 'a[$(cmd)]'``) or change what later names run. Always
# "not understood"; an exact "allow always" pattern can still allow one such command.
_EVALUATING = frozenset(
    {
        "eval", "source", ".", "let", "trap", "fc", "bind", "complete", "compgen", "compopt",
        "enable", "alias", "hash", "declare", "typeset", "local", "export", "readonly",
        "mapfile", "readarray", "read", "unset", "getopts", "wait", "command", "builtin",
        "shopt", "coproc", "select", "function", "[[", "((",
    }
)  # fmt: skip
# Assignments to these change how bash itself evaluates or finds things later.
_SPECIAL_NAME = re.compile(
    r"PS[0-4]|PROMPT_COMMAND|BASH_\w*|ENV|SHELLOPTS|BASHOPTS|PATH|IFS|CDPATH|GLOBIGNORE"
    r"|LD_\w*|HIST\w*|FUNCNEST|TMOUT|POSIXLY_CORRECT"
)


@dataclass(frozen=True, slots=True)
class Analysis:
    """``problem``: why the command is not fully understood (None: it is).

    ``writes``: the grammar saw an output redirect to a file somewhere; ``unmodelled`` checks
    that the splitter flagged one too, so the two readings cannot disagree silently.
    """

    problem: str | None
    writes: bool = False
    commands: tuple[bytes, ...] = ()  # the text of every simple command, as the grammar saw it


_LANGUAGE = Language(tree_sitter_bash.language())
_local = threading.local()


def _parser() -> Parser:
    """One parser per thread: a tree-sitter parser is not safe to share between threads."""
    parser: Parser | None = getattr(_local, "parser", None)
    if parser is None:
        parser = _local.parser = Parser(_LANGUAGE)
    return parser


def unmodelled(command: str, segments: Sequence[Segment]) -> str | None:
    """Why ``command`` may not be matched against globs (None: every part is understood).

    ``segments`` are the splitter's reading of the same text. The two readings must agree
    where it matters: every command the grammar sees starts a segment (so a pattern was
    matched against it), and an output redirect the grammar sees was flagged by the splitter.
    """
    analysis = analyse(command)
    if analysis.problem is not None:
        return analysis.problem
    by_head: dict[bytes, list[bytes]] = {}
    for segment in segments:
        text = _NON_ASCII.sub(b"a", segment.text.encode("utf-8"))
        by_head.setdefault(_head(text), []).append(text)
    for found in analysis.commands:
        if not any(_starts_with(seg, found) for seg in by_head.get(_head(found), ())):
            shown = found.decode("utf-8", "replace")[:60]
            return f"a command the splitter did not see on its own: '{shown}'"
    if analysis.writes and not any(s.redirects_output for s in segments):
        return "an output redirect the splitter did not see"
    return None


def _head(text: bytes) -> bytes:
    """The bytes up to the first blank or redirection character.

    Equal for a command and a segment that starts with it, so only segments with the same
    head need comparing (thousands of commands must not compare against each other).
    """
    match = _HEAD.match(text)
    return match.group(0) if match else b""


def _starts_with(segment: bytes, command: bytes) -> bool:
    """``segment`` is ``command`` plus, at most, redirections after a word boundary."""
    rest = segment[len(command) : len(command) + 1]
    return segment.startswith(command) and rest in (b"", b" ", b"\t", b"\n", b"<", b">", b"&")


def analyse(command: str) -> Analysis:
    """Check that every part of ``command`` is a construct the policy fully models."""
    try:
        source = command.encode("utf-8")
    except UnicodeEncodeError:
        return Analysis("text that is not valid UTF-8")
    if len(source) > MAX_ANALYSED_BYTES:
        return Analysis(f"longer than {MAX_ANALYSED_BYTES} bytes")
    if _CONTROL.search(source):
        return Analysis("control characters other than tab and newline")
    # tree-sitter-bash 0.25 can crash the process on some non-ASCII text (e.g. '{' followed by
    # U+E0000). bash reads every non-ASCII UTF-8 byte as an ordinary word character, so the
    # grammar gets each such byte as 'a': same byte offsets, same structure, no crash.
    source = _NON_ASCII.sub(b"a", source)
    if _HEREDOC.search(source) and source.count(b"$") + source.count(b"`") > _HEREDOC_EXPANSIONS:
        return Analysis(f"a here-document with more than {_HEREDOC_EXPANSIONS} '$' or '`'")
    tree = _parse(source)  # held until the walk ends: nodes point into it
    if tree is None:
        return Analysis(f"the shell grammar took over {_PARSE_BUDGET_S} s to parse it")
    if tree.root_node.has_error:
        return Analysis("the shell grammar cannot parse it")
    return _Walk(source, shown=command.encode("utf-8")).run(tree.root_node)


def _parse(source: bytes) -> Tree | None:
    """The parse tree, or None when parsing ran over its time budget.

    The parse holds the GIL, so a slow one would stall the event loop even from a worker
    thread; the progress callback both bounds it and gives other threads a turn.
    """
    parser = _parser()
    deadline = time.monotonic() + _PARSE_BUDGET_S
    try:
        return parser.parse(
            lambda at, _point: source[at : at + 65536],
            progress_callback=lambda _at, _error: time.monotonic() > deadline,
        )
    except ValueError:  # cancelled: "Parsing failed"
        parser.reset()
        return None


class _Walk:
    """An explicit-stack walk (deep nesting must not hit Python's recursion limit)."""

    def __init__(self, source: bytes, *, shown: bytes) -> None:
        self.source = source
        self.shown = shown  # the original text, for reasons
        self.commands: list[bytes] = []
        self.writes = False

    def text(self, node: Node) -> bytes:
        return self.source[node.start_byte : node.end_byte]

    def run(self, root: Node) -> Analysis:
        stack = [root]
        while stack:
            node = stack.pop()
            problem = self.check(node)
            if problem is not None:
                shown = self.shown[node.start_byte : node.end_byte].decode("utf-8", "replace")
                shown = shown if len(shown) <= 60 else shown[:57] + "..."
                return Analysis(f"{problem}: '{shown}'")
            stack.extend(c for c in node.children if c.is_named)
        return Analysis(None, self.writes, tuple(self.commands))

    def check(self, node: Node) -> str | None:
        kind = node.type
        if node.is_error or node.is_missing:
            return "the shell grammar cannot parse it"
        if kind in _LEAVES or (kind in _QUOTED_BODY and not node.children):
            if node.children:
                return f"unexpected structure in {kind}"
            shape = _LEAVES.get(kind)
            if shape is not None and not shape.fullmatch(self.text(node)):
                return f"{kind} with characters the policy does not model"
            if kind == "comment" and not self._real_comment(node):
                return "a '#' that bash may not read as a comment"
            return None
        tokens = _TOKENS.get(kind)
        if tokens is None:
            return f"{kind.replace('_', ' ')} is not modelled"
        for child in node.children:
            if not child.is_named and child.type not in tokens:
                return f"'{child.type}' in {kind.replace('_', ' ')} is not modelled"
            if not child.is_named and self.text(child).strip(b" \t") not in (
                b"",
                child.type.encode(),
            ):
                return "a token whose text the shell grammar mis-read"
        gap = _LITERAL_GAP if kind in ("string", "heredoc_body") else _BLANKS
        at = node.start_byte
        for child in node.children:
            if not gap.fullmatch(self.source[at : child.start_byte]):
                return "text the shell grammar skipped"
            at = child.end_byte
        if not gap.fullmatch(self.source[at : node.end_byte]):
            return "text the shell grammar skipped"
        special = getattr(self, f"_{kind}", None)
        return special(node) if special is not None else None

    def _real_comment(self, node: Node) -> bool:
        """Bash starts a comment only at a word boundary; be stricter than it is."""
        i = node.start_byte
        before = self.source[max(0, i - 2) : i]
        return i == 0 or (before[-1:] in (b" ", b"\t", b"\n", b";") and before[:1] != b"\\")

    def _for_statement(self, node: Node) -> str | None:
        name = node.child_by_field_name("variable")
        if name is None or _SPECIAL_NAME.fullmatch(self.text(name).decode()):
            return "a loop over a variable bash itself evaluates"
        return None

    def _heredoc_redirect(self, node: Node) -> str | None:
        """The grammar's idea of where the body ends must be bash's: else lines could hide."""
        start = next((c for c in node.children if c.type == "heredoc_start"), None)
        end = next((c for c in node.children if c.type == "heredoc_end"), None)
        body = next((c for c in node.children if c.type == "heredoc_body"), None)
        if start is None or end is None:
            return "here-document the policy does not model"
        delimiter = self.text(start).strip(b"'\"")
        if self.text(end) != delimiter:
            return "here-document whose end the policy does not model"
        lines = self.text(body).split(b"\n") if body is not None else []
        if any(line.lstrip(b"\t") == delimiter for line in lines):
            return "here-document whose end the policy does not model"
        return None

    def _expansion(self, node: Node) -> str | None:
        """``${name}`` only: every operator (``:=``, ``@P``, ``!``, ``[…]``, ``/``, ``#``…)."""
        named = [c.type for c in node.children]
        if len(named) != 3 or named[1] not in ("variable_name", "special_variable_name"):
            return "parameter expansion with an operator"
        return None

    def _simple_expansion(self, node: Node) -> str | None:
        if len(node.children) != 2:
            return "parameter expansion with an operator"
        return None

    def _variable_assignment(self, node: Node) -> str | None:
        name = node.children[0]
        if name.type != "variable_name" or len(node.children) > 3:
            return "assignment to an array element or of an array"
        if _SPECIAL_NAME.fullmatch(self.text(name).decode()):
            return "assignment to a variable bash itself evaluates"
        return None

    def _file_redirect(self, node: Node) -> str | None:
        ops = [c.type for c in node.children if not c.is_named]
        targets = [c for c in node.children if c.is_named and c.type != "file_descriptor"]
        if len(ops) != 1 or len(targets) > 1 or (not targets and ops[0] not in (">&-", "<&-")):
            return "redirection the policy does not model"
        if ops[0] in _OUTPUT_OPS and not self._harmless_target(ops[0], targets[0]):
            self.writes = True
        return None

    def _harmless_target(self, op: str, target: Node) -> bool:
        text = self.text(target)
        if op == ">&" and (target.type == "number" or text == b"-"):
            return True
        return text == b"/dev/null"

    def _command(self, node: Node) -> str | None:
        self.commands.append(self.text(node).strip())
        words = [c for c in node.children if c.type not in ("variable_assignment", "file_redirect")]
        if not words or words[0].type != "command_name":
            return None  # only assignments (and redirections)
        name = self._literal(words[0].children[0]) if words[0].children else None
        if name is None:
            return "a command name computed when it runs"
        if name in _EVALUATING:
            return f"'{name}' evaluates its arguments as code or variable names"
        if name not in ("printf", "test"):
            return None
        args = [self._literal(w) for w in words[1:]]
        if (
            name == "printf"
            and args
            and (args[0] is None or (args[0].startswith("-") and args[0] != "--"))
        ):
            return "printf with an option (-v assigns, evaluating a subscript)"
        if name == "test" and any(a is None or a in ("-v", "-R") for a in args):
            return "test with -v or a computed argument (may evaluate a subscript)"
        return None

    def _literal(self, node: Node) -> str | None:
        """The word's value when it has no expansions at all (quotes removed); else None."""
        kind, text = node.type, self.text(node).decode("utf-8", "replace")
        if kind in ("word", "number"):
            return re.sub(r"\\(.)", r"\1", text.replace("\\\n", ""))
        if kind == "raw_string":
            return text[1:-1]
        if kind == "string" and all(c.type in ('"', "string_content") for c in node.children):
            return re.sub(r'\\([$`"\\])', r"\1", text[1:-1].replace("\\\n", ""))
        if kind == "concatenation":
            parts = [self._literal(c) for c in node.children]
            return None if any(p is None for p in parts) else "".join(p or "" for p in parts)
        return None  # expansions, substitutions, $'…' (its escapes can spell anything)
