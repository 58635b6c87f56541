"""Splits P4 source lines into tokens (identifiers, numbers, strings, operators)."""

import re
from dataclasses import dataclass

from dplab.p4.errors import Loc, P4Error

# Longest operators first so that "&&&" wins over "&&" and "|+|" over "|".
OPERATORS = [
    "&&&", "|+|", "|-|", "<<", "==", "!=", "<=", ">=", "&&", "||", "++", "..",
    "{", "}", "(", ")", "[", "]", "<", ">", ";", ":", ",", ".", "=", "+", "-", "*",
    "/", "%", "&", "|", "^", "~", "!", "?", "@", "#",
]
_NUMBER = re.compile(
    r"(?:(\d+)([ws]))?(0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|\d[\d_]*)"
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_BASES = {"x": 16, "b": 2, "o": 8, "d": 10}


@dataclass(frozen=True)
class Token:
    kind: str            # "id", "int", "str", "op", "eof"
    text: str
    loc: Loc
    width: int | None = None   # for "int": the width of `8w5`, None for a plain integer
    value: int = 0             # for "int"
    signed: bool = False       # `8s5`
    glued: bool = False        # no blank between this token and the previous one


def _number(match: re.Match[str], loc: Loc) -> Token:
    width_text, kind, digits = match.groups()
    digits = digits.replace("_", "")
    if len(digits) > 1 and digits[0] == "0" and digits[1].lower() in _BASES:
        value = int(digits[2:], _BASES[digits[1].lower()])
    else:
        value = int(digits, 10)
    width = int(width_text) if width_text else None
    return Token("int", match.group(0), loc, width, value, kind == "s")


def tokenize_line(text: str, file: str, line: int) -> list[Token]:
    """Tokens of one source line (comments already blanked out)."""
    tokens: list[Token] = []
    pos = 0
    glued = False
    while pos < len(text):
        if text[pos].isspace():
            pos += 1
            glued = False
            continue
        loc = Loc(file, line, pos + 1)
        token, pos = _next_token(text, pos, loc)
        tokens.append(Token(token.kind, token.text, loc, token.width, token.value,
                            token.signed, glued))
        glued = True
    return tokens


def _next_token(text: str, pos: int, loc: Loc) -> tuple[Token, int]:
    if text[pos].isdigit():
        match = _NUMBER.match(text, pos)
        end = match.end() if match else pos + 1
        if match is None or (end < len(text) and (text[end].isalnum() or text[end] == "_")):
            bad = _IDENT.match(text, pos + 1)
            raise P4Error(loc, f"malformed number '{text[pos:bad.end() if bad else end]}'")
        return _number(match, loc), end
    match = _IDENT.match(text, pos)
    if match:
        return Token("id", match.group(0), loc), match.end()
    if text[pos] == '"':
        match = _STRING.match(text, pos)
        if match is None:
            raise P4Error(loc, "string is not closed on this line")
        return Token("str", match.group(0)[1:-1], loc), match.end()
    for op in OPERATORS:
        if text.startswith(op, pos):
            return Token("op", op, loc), pos + len(op)
    raise P4Error(loc, f"unexpected character {text[pos]!r}")
