"""Signed `int<W>` (P4_16 8.9.2) lowered onto the IR's unsigned ops (docs/p4-ir.md §1).

An int<W> value is its W-bit two's complement pattern in the same registers as a bit<W>.
Addition, subtraction, multiplication, negation, the bitwise ops, `<<`, `==` and `!=` are the
same operations on the pattern, so the IR needs no signed ops; only these differ, and each
becomes a few unsigned ones (the operand trees are pure, so repeating one is safe):

* `<` `<=` `>` `>=`: flipping the sign bit maps -2^(W-1)..2^(W-1)-1 in order onto
  0..2^W-1, so the unsigned comparison of the flipped operands is the signed one;
* `>>` (arithmetic): with s the sign mask (all ones for a negative value), `a >> n` is
  `((a ^ s) >> n) ^ s`; a shift of W or more gives s, as P4 wants;
* a cast to a wider int<X> (sign extension): `(zext(a) ^ m) - m` with m = 2^(W-1);
* `|+|` `|-|` (saturating): the wrapped sum or difference r overflowed when the sign bit of
  `(a ^ r) & (b ^ r)` (sum) or `(a ^ b) & (a ^ r)` (difference) is set, and then the
  result is the bound on a's side (P4_16 8.9.2: int<W>'s minimum for a negative a, else
  its maximum).
"""

from dplab.p4.types import Signed


def as_signed(pattern: int, width: int) -> int:
    """The value a W-bit two's complement pattern stands for."""
    pattern &= (1 << width) - 1
    return pattern - (1 << width) if pattern >> (width - 1) else pattern


def fits(value: int, width: int) -> bool:
    return -(1 << (width - 1)) <= value < 1 << (width - 1)


def _const(value: int, width: int) -> dict:
    return {"op": "const", "w": width, "v": hex(value & ((1 << width) - 1))}


def _flip(ir: dict, width: int) -> dict:
    return {"op": "xor", "w": width, "a": ir, "b": _const(1 << (width - 1), width)}


def compare(irop: str, a: dict, b: dict, width: int) -> dict:
    """A signed `lt`/`le`/`gt`/`ge` of two int<W> trees."""
    return {"op": irop, "w": 1, "a": _flip(a, width), "b": _flip(b, width)}


def _sign_mask(ir: dict, width: int) -> dict:
    msb = {"op": "slice", "w": 1, "a": ir, "hi": width - 1, "lo": width - 1}
    if width > 1:
        msb = {"op": "cast", "w": width, "a": msb}
    return {"op": "neg", "w": width, "a": msb}


def shift_right(a: dict, amount: dict, width: int) -> dict:
    """Arithmetic `a >> amount` of an int<W> tree (amount unsigned, any width)."""
    mask = _sign_mask(a, width)
    flipped = {"op": "xor", "w": width, "a": a, "b": mask}
    shifted = {"op": "shr", "w": width, "a": flipped, "b": amount}
    return {"op": "xor", "w": width, "a": shifted, "b": mask}


def extend(a: dict, width: int, to: int) -> dict:
    """Sign-extend an int<W> tree to int<to> (to > width)."""
    m = _const(1 << (width - 1), to)
    widened = {"op": "cast", "w": to, "a": a}
    return {"op": "sub", "w": to, "a": {"op": "xor", "w": to, "a": widened, "b": m}, "b": m}


def _msb(ir: dict, width: int) -> dict:
    return {"op": "slice", "w": 1, "a": ir, "hi": width - 1, "lo": width - 1}


def saturating(op: str, a: dict, b: dict, width: int) -> dict:
    """`a |+| b` or `a |-| b` of two int<W> trees."""
    wrapped = {"op": "add" if op == "|+|" else "sub", "w": width, "a": a, "b": b}

    def xor(x: dict, y: dict) -> dict:
        return {"op": "xor", "w": width, "a": x, "b": y}

    first = xor(a, wrapped) if op == "|+|" else xor(a, b)
    second = xor(b, wrapped) if op == "|+|" else xor(a, wrapped)
    overflow = _msb({"op": "and", "w": width, "a": first, "b": second}, width)
    bound = {"op": "cond", "w": width, "c": _msb(a, width),
             "a": _const(1 << (width - 1), width), "b": _const((1 << (width - 1)) - 1, width)}
    return {"op": "cond", "w": width, "c": overflow, "a": bound, "b": wrapped}


def fold_saturating(op: str, a: int, b: int, width: int) -> int:
    """The pattern of `a |+| b` / `a |-| b` for two constant int<W> patterns."""
    x, y = as_signed(a, width), as_signed(b, width)
    exact = x + y if op == "|+|" else x - y
    low, high = -(1 << (width - 1)), (1 << (width - 1)) - 1
    return min(max(exact, low), high) & ((1 << width) - 1)


def fold_compare(op: str, a: int, b: int, typ: Signed) -> bool:
    x, y = as_signed(a, typ.width), as_signed(b, typ.width)
    return {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]
