"""The one error type of the compiler: where (file, line, column) and what went wrong."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Loc:
    """A position in a source file; line and column count from 1."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class P4Warning:
    """Something p4c would also warn about: the program compiles, but may not do what its
    author meant."""

    loc: Loc
    reason: str

    def __str__(self) -> str:
        return f"{self.loc}: warning: {self.reason}"


class P4Error(Exception):
    """A program outside the supported subset, or wrong."""

    def __init__(self, loc: Loc, reason: str) -> None:
        super().__init__(f"{loc}: {reason}")
        self.loc = loc
        self.reason = reason

    @property
    def file(self) -> str:
        return self.loc.file

    @property
    def line(self) -> int:
        return self.loc.line

    @property
    def col(self) -> int:
        return self.loc.col
