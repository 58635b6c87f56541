"""How large a program's counts may be: the bounds keep the compiler and the switch finite.

Real programs stay far below every bound; a mutated or hostile one must get a located
P4Error here rather than exhaust the compiler's stack or memory, or the switch's.
"""

from dplab.p4.errors import Loc, P4Error

# Nesting of expressions, statements and types: every pass of the compiler is recursive.
MAX_NESTING = 100
# Elements of a counter, meter, register, value set, action profile and entries of a table:
# the switch allocates the first three up front and refuses more (switch/src/program.rs).
MAX_SIZE = 1 << 24
# Elements of a header stack: each one is a header instance of its own in the IR.
MAX_STACK = 1024
# Bits an arbitrary-precision integer constant may have (`1 << n` with a huge n).
MAX_INT_BITS = 4096
# Iterations of one `for` loop: the compiler unrolls it (dplab/p4/loops.py), one copy of
# the body per iteration; and copies of loop bodies in a whole program (nested loops
# multiply).
MAX_UNROLLED = 1024
MAX_UNROLLED_COPIES = 1 << 12
# Tokens the preprocessor's macro expansions may make in one program, arguments substituted
# included: a chain of #define macros that each use the one before twice doubles per level
# (40 lines reach 2^40 tokens), and the preprocessor must stop long before memory does.
MAX_MACRO_TOKENS = 1 << 18


def checked_size(loc: Loc, size: int, what: str) -> int:
    """`size` if it lies in 0..MAX_SIZE, else a P4Error naming `what`."""
    if not 0 <= size <= MAX_SIZE:
        raise P4Error(loc, f"{what} {size} is outside 0..{MAX_SIZE}")
    return size
