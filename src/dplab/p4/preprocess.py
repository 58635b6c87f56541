"""The C-like preprocessor subset: #include, #define (constants and function-like macros),
#undef, #if/#ifdef/#else.

Produces one token list for the whole program; every token keeps the file, line and column
it came from (a macro's tokens take the location of the macro's use). A function-like
macro's call must fit on one (logical) line; `#` and `##` in a macro body are not supported.
"""

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dplab.p4.errors import Loc, P4Error
from dplab.p4.lexer import Token, tokenize_line
from dplab.p4.limits import MAX_MACRO_TOKENS, MAX_NESTING

INCLUDE_DIR = Path(__file__).parent / "include"
_DIRECTIVE = re.compile(r"\s*#\s*(\w+)\s*(.*)$")
_MAX_INCLUDE_DEPTH = 32
# p4c's other architectures' include files: named in the error, not just "not found"
OTHER_ARCHITECTURES = {"psa.p4", "pna.p4", "ebpf_model.p4", "ubpf_model.p4", "tna.p4",
                       "t2na.p4", "xdp_model.p4", "dpdk/psa.p4"}


# Every program includes the same core.p4 and v1model.p4, whose comment blanking and
# tokenizing are half of a small program's compile: a process that compiles many programs
# (the fuzz and compiler tests, a study's planes) does them once. Tokens are frozen, so the
# lines' tuples are shared safely; a P4Error is raised again, never cached.
@functools.lru_cache(maxsize=16)
def blank_comments(text: str, file: str) -> str:
    """Replace comments by spaces (newlines kept) so that line and column numbers stay right."""
    out = []
    i, line, line_start = 0, 1, 0
    while i < len(text):
        two = text[i:i + 2]
        if two == "//":
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif two == "/*":
            end = text.find("*/", i + 2)
            if end < 0:
                raise P4Error(Loc(file, line, i - line_start + 1), "comment is never closed")
            chunk = text[i:end + 2]
            out.append("".join(c if c == "\n" else " " for c in chunk))
            line += chunk.count("\n")
            if "\n" in chunk:
                line_start = i + chunk.rfind("\n") + 1
            i = end + 2
        elif text[i] == '"':
            end = i + 1
            while end < len(text) and text[end] not in '"\n':
                end += 2 if text[end] == "\\" else 1
            out.append(text[i:end + 1])
            i = end + 1
        else:
            if text[i] == "\n":
                line += 1
                line_start = i + 1
            out.append(text[i])
            i += 1
    return "".join(out)


@dataclass
class _Condition:
    active: bool           # this branch is being compiled
    taken: bool            # some branch of this #if chain was already compiled
    loc: Loc


@dataclass
class _Macro:
    body: list[Token]
    loc: Loc  # of its #define
    params: list[str] | None = None  # None: an object-like macro (a constant)


@functools.lru_cache(maxsize=8192)
def _line_tokens(text: str, file: str, line: int) -> tuple[Token, ...]:
    """tokenize_line's tokens of one source line, kept as blank_comments' results are."""
    return tuple(tokenize_line(text, file, line))


@dataclass
class Preprocessor:
    defines: dict[str, _Macro] = field(default_factory=dict)
    tokens: list[Token] = field(default_factory=list)
    depth: int = 0
    expanded: int = 0  # tokens made by macro expansion so far (bounded: MAX_MACRO_TOKENS)
    _using: tuple[Token, _Macro] | None = None  # the outermost macro use being expanded

    def run_file(self, path: Path, loc: Loc | None = None) -> None:
        if self.depth > _MAX_INCLUDE_DEPTH:
            raise P4Error(loc or Loc(str(path), 1, 1), "#include nests too deeply")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise P4Error(loc or Loc(str(path), 1, 1), f"cannot read {path}: {exc}") from None
        self.depth += 1
        self._run_text(blank_comments(text, str(path)), path)
        self.depth -= 1

    def _run_text(self, text: str, path: Path) -> None:
        conditions: list[_Condition] = []
        lines = text.split("\n")
        number = 0
        while number < len(lines):
            line, start = lines[number], number + 1
            while line.endswith("\\") and number + 1 < len(lines):
                number += 1
                line = line[:-1] + " " + lines[number]
            number += 1
            loc = Loc(str(path), start, 1)
            directive = _DIRECTIVE.match(line)
            active = all(c.active for c in conditions)
            if directive:
                self._directive(directive.group(1), directive.group(2).strip(), loc, path,
                                conditions, active)
            elif active:
                self._append(_line_tokens(line, str(path), start), set())
        if conditions:
            raise P4Error(conditions[-1].loc, "#if/#ifdef without a matching #endif")

    def _directive(self, name: str, rest: str, loc: Loc, path: Path,
                   conditions: list[_Condition], active: bool) -> None:
        if name in ("ifdef", "ifndef", "if"):
            value = self._condition(name, rest, loc) if active else False
            conditions.append(_Condition(active and value, value, loc))
        elif name in ("else", "elif"):
            if not conditions:
                raise P4Error(loc, f"#{name} without #if")
            cond = conditions[-1]
            outer = all(c.active for c in conditions[:-1])
            value = not cond.taken and (name == "else" or self._condition("if", rest, loc))
            cond.active = outer and value
            cond.taken = cond.taken or value
        elif name == "endif":
            if not conditions:
                raise P4Error(loc, "#endif without #if")
            conditions.pop()
        elif not active:
            return
        elif name == "include":
            self._include(rest, loc, path)
        elif name == "define":
            self._define(rest, loc)
        elif name == "undef":
            self.defines.pop(rest.split()[0] if rest else "", None)
        elif name in ("error", "warning"):
            if name == "error":
                raise P4Error(loc, f"#error {rest}")
        elif name not in ("pragma", "line"):
            raise P4Error(loc, f"unsupported preprocessor directive #{name}")

    def _condition(self, kind: str, rest: str, loc: Loc) -> bool:
        words = rest.split()
        if not words:
            raise P4Error(loc, f"#{kind} needs an argument")
        if kind == "ifdef":
            return words[0] in self.defines
        if kind == "ifndef":
            return words[0] not in self.defines
        defined = re.fullmatch(r"!?\s*defined\s*\(?\s*(\w+)\s*\)?", rest)
        if defined:
            return (words[0][0] == "!") != (defined.group(1) in self.defines)
        tokens = self._expanded(tokenize_line(rest, loc.file, loc.line))
        if len(tokens) != 1 or tokens[0].kind != "int":
            raise P4Error(loc, "#if supports only a number, a defined constant or defined(NAME)")
        return tokens[0].value != 0

    def _include(self, rest: str, loc: Loc, path: Path) -> None:
        match = re.fullmatch(r'<([^>]+)>|"([^"]+)"', rest)
        if not match:
            raise P4Error(loc, '#include needs <file> or "file"')
        system, local = match.groups()
        local_dirs = [path.parent / str(local), INCLUDE_DIR / str(local)]
        candidates = [INCLUDE_DIR / system] if system else local_dirs
        for candidate in candidates:
            if candidate.is_file():
                self.run_file(candidate, loc)
                return
        if Path(str(system or local)).name in OTHER_ARCHITECTURES:
            raise P4Error(loc, f"architecture {system or local} is not supported: dplab "
                          "compiles v1model programs only (#include <v1model.p4>)")
        raise P4Error(loc, f"included file {system or local} not found")

    def _define(self, rest: str, loc: Loc) -> None:
        match = re.match(r"(\w+)(?:\(([^)]*)\))?", rest)
        if not match:
            raise P4Error(loc, "#define needs a name")
        params = None
        if match.group(2) is not None:
            params = [p.strip() for p in match.group(2).split(",")] if match.group(2).strip() \
                else []
            if not all(re.fullmatch(r"\w+", p) for p in params):
                raise P4Error(loc, f"#define {match.group(1)}: parameters must be names")
        body_col = loc.col + len("#define ") + match.end()
        body = tokenize_line(" " * body_col + rest[match.end():], loc.file, loc.line)
        if params is not None and any(t.text in ("#", "##") for t in body if t.kind == "op"):
            raise P4Error(loc, f"#define {match.group(1)}: # and ## in a macro are not "
                          "supported")
        self.defines[match.group(1)] = _Macro(body, loc, params)

    def _expanded(self, tokens: list[Token], hiding: frozenset[str] = frozenset()) -> list[Token]:
        out: list[Token] = []
        self._append(tokens, set(hiding), out)
        return out

    def _append(self, tokens: Sequence[Token], hiding: set[str],
                out: list[Token] | None = None) -> None:
        target = self.tokens if out is None else out
        i = 0
        while i < len(tokens):
            token = tokens[i]
            macro = self.defines.get(token.text) if token.kind == "id" else None
            calls = macro is not None and macro.params is not None
            if macro is None or token.text in hiding or \
                    (calls and (i + 1 >= len(tokens) or tokens[i + 1].text != "(")):
                target.append(token)  # a function-like macro's name alone is no call (C)
                i += 1
                continue
            if not hiding:
                self._using = (token, macro)  # the macro the source uses, named in errors
            if len(hiding) >= MAX_NESTING:
                raise self._too_much(f"expands macros nested more than {MAX_NESTING} deep")
            body = macro.body
            i += 1
            if calls:
                args, i = _call_arguments(tokens, i, token)
                body = self._substituted(macro, args, token, hiding)
            else:
                self._spend(len(body))
            moved = [Token(t.kind, t.text, token.loc, t.width, t.value, t.signed, t.glued)
                     for t in body]
            self._append(moved, hiding | {token.text}, target)

    def _spend(self, tokens: int) -> None:
        """Count ``tokens`` about to be made by a macro expansion; a P4Error at the macro's
        use once the program's expansions would make more than MAX_MACRO_TOKENS."""
        self.expanded += tokens
        if self.expanded > MAX_MACRO_TOKENS:
            raise self._too_much(f"makes the program's macro expansions exceed "
                                 f"{MAX_MACRO_TOKENS} tokens (a chain of macros that each "
                                 "use the one before more than once grows exponentially)")

    def _too_much(self, what: str) -> P4Error:
        token, macro = self._using
        return P4Error(token.loc, f"macro {token.text} (#define at {macro.loc}) {what}")

    def _substituted(self, macro: _Macro, args: list[list[Token]], name: Token,
                     hiding: set[str]) -> list[Token]:
        """The macro's body with each parameter replaced by its (expanded) argument."""
        params = macro.params or []
        if not params and args == [[]]:
            args = []  # NAME() of a macro without parameters
        if len(args) != len(params):
            raise P4Error(name.loc, f"macro {name.text} takes {len(params)} arguments, "
                          f"got {len(args)}")
        expanded = {p: self._expanded(a, frozenset(hiding))
                    for p, a in zip(params, args, strict=True)}
        pieces = [expanded[t.text] if t.kind == "id" and t.text in expanded else [t]
                  for t in macro.body]
        self._spend(sum(len(piece) for piece in pieces))  # before they are made
        return [t for piece in pieces for t in piece]


def _call_arguments(tokens: Sequence[Token], i: int, name: Token) -> tuple[list[list[Token]], int]:
    """The arguments of a macro call whose "(" is tokens[i], split at top-level commas, and
    the index after its ")"."""
    args: list[list[Token]] = [[]]
    depth = 0
    for j in range(i + 1, len(tokens)):
        t = tokens[j]
        if t.kind == "op" and t.text == ")" and depth == 0:
            return args, j + 1
        if t.kind == "op" and t.text == "," and depth == 0:
            args.append([])
            continue
        if t.kind == "op" and t.text in "([{":
            depth += 1
        elif t.kind == "op" and t.text in ")]}":
            depth -= 1
        args[-1].append(t)
    raise P4Error(name.loc, f"call of macro {name.text} must end with ) on the same line")


def preprocess(path: Path) -> list[Token]:
    """All tokens of the program at `path`, includes and macros expanded, ending with "eof"."""
    pre = Preprocessor()
    pre.run_file(path)
    last = pre.tokens[-1].loc if pre.tokens else Loc(str(path), 1, 1)
    pre.tokens.append(Token("eof", "", last))
    return pre.tokens
