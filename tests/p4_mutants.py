"""Seeded, deterministic mutants of P4 programs for fuzzing the compiler.

Each mutant is (name, source text): the same seed always gives the same mutants, so a
crash found by the fuzz script reproduces in a test. Mutations work on a rough split of
the source into tokens (words, numbers, single punctuation, blanks), which is enough to
delete, duplicate, swap and replace pieces without knowing P4.
"""

import random
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASIC = ROOT / "tests" / "p4" / "dst_mac_fwd.p4"
_PIECES = re.compile(r"\s+|[A-Za-z_][A-Za-z0-9_]*|\d\w*|\"[^\"\n]*\"|.", re.S)
_ODD_NUMBERS = ["0", "1", "-1", "0w0", "1w0", "0w1", "1w2", "64w0", "65w1", "128w1", "4096w1",
                "99999999999999999999w1", "8w256", "8s-1", "2s3", "1s1", "0x", "0b2", "1_",
                "340282366920938463463374607431768211456", "-99999999999999999999",
                "8w0xFFFFFFFFFFFFFFFFFF", "0d99", "4w16", "32w-1"]


def repository_programs() -> list[Path]:
    """Every P4 program the repository holds (the includes excepted: they are not programs)."""
    roots = [ROOT / "p4src", ROOT / "tests", ROOT / "benchmarks"]
    return sorted(p for r in roots for p in r.rglob("*.p4"))


def pieces(text: str) -> list[str]:
    return _PIECES.findall(text)


def _word_indices(parts: list[str]) -> list[int]:
    return [i for i, p in enumerate(parts) if not p.isspace()]


def delete_token(parts: list[str], rng: random.Random) -> list[str]:
    i = rng.choice(_word_indices(parts))
    return parts[:i] + parts[i + 1:]


def duplicate_token(parts: list[str], rng: random.Random) -> list[str]:
    i = rng.choice(_word_indices(parts))
    return parts[:i + 1] + [" ", parts[i]] + parts[i + 1:]


def swap_tokens(parts: list[str], rng: random.Random) -> list[str]:
    words = _word_indices(parts)
    i, j = rng.choice(words), rng.choice(words)
    out = list(parts)
    out[i], out[j] = out[j], out[i]
    return out


def odd_number(parts: list[str], rng: random.Random) -> list[str]:
    numbers = [i for i, p in enumerate(parts) if p[0].isdigit()] or _word_indices(parts)
    out = list(parts)
    out[rng.choice(numbers)] = rng.choice(_ODD_NUMBERS)
    return out


def swap_identifier(parts: list[str], rng: random.Random) -> list[str]:
    names = [i for i, p in enumerate(parts) if p[0].isalpha() or p[0] == "_"]
    names = names or _word_indices(parts)
    out = list(parts)
    out[rng.choice(names)] = parts[rng.choice(names)]
    return out


def cut(parts: list[str], rng: random.Random) -> list[str]:
    return parts[:rng.randrange(len(parts))]


def insert_punctuation(parts: list[str], rng: random.Random) -> list[str]:
    i = rng.randrange(len(parts))
    return parts[:i] + [rng.choice(list("{}()[]<>;:,.=@#!~?&|^+-*/%\"'$`\\"))] + parts[i:]


MUTATIONS = [delete_token, duplicate_token, swap_tokens, odd_number, swap_identifier, cut,
             insert_punctuation]


def mutants(text: str, seed: int, count: int) -> Iterator[str]:
    """`count` mutants of `text`, each with one to three mutations."""
    rng = random.Random(seed)
    parts = pieces(text)
    for _ in range(count):
        out = parts
        for _ in range(rng.randint(1, 3)):
            if _word_indices(out):
                out = rng.choice(MUTATIONS)(out, rng)
        yield "".join(out)


def garbage(seed: int, count: int) -> Iterator[str]:
    """Random bytes decoded leniently, and random printable text."""
    rng = random.Random(seed)
    for _ in range(count):
        raw = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400)))
        yield raw.decode("latin-1")
        yield "".join(rng.choice("{}()<>;=:.,@#abcxyz0123456789 \n\"'/*+-") for _ in range(300))


def deep_nesting(depth: int) -> dict[str, str]:
    """dst_mac_fwd.p4 with one statement nested `depth` levels deep at the start of its ingress
    apply block (and two declarations): the compiler must refuse it or compile it, whole."""
    port = "standard_metadata.egress_spec"
    statements = {
        "parentheses": f"{port} = {'(' * depth}{port}{')' * depth};",
        "open_parentheses": f"{port} = {'(' * depth}{port};",
        "unary": f"{port} = {'~' * depth}{port};",
        "binary": f"{port} = {port}{' + 1' * depth};",
        "casts": f"{port} = {'(bit<9>)' * depth}{port};",
        "slices": f"{port} = {port}{'[8:0]' * depth};",
        "braces": "{" * depth + "}" * depth,
        "if_else": f"if ({port} == 1) {{ {port} = 2; }} else " * depth + "{ exit; }",
        "nested_if": f"if ({port} == 1) {{ " * depth + "exit;" + " }" * depth,
        "conditional": f"{port} = " + f"{port} == 1 ? 9w1 : " * depth + "9w2;",
    }
    programs = {k: in_ingress(v) for k, v in statements.items()}
    programs["type_args"] = "typedef " + "tuple<" * depth + "bit<8>" + ">" * depth + " T;\n" \
        + BASIC.read_text()
    programs["unclosed"] = in_ingress("{" * depth, cut=True)
    return programs


def in_ingress(statement: str, cut: bool = False, declaration: bool = False) -> str:
    """dst_mac_fwd.p4 with `statement` at the start of its ingress apply block, which is line
    126, column 12 (`cut`: and nothing after it); a `declaration` goes just before the
    block, at line 126, column 5."""
    text = BASIC.read_text()
    apply = text.index("apply {", text.index("control BasicIngress"))
    if declaration:
        return text[:apply] + statement + " " + text[apply:]
    apply += len("apply {")
    return text[:apply] + statement + ("" if cut else text[apply:])
