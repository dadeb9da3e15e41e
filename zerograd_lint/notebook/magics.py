"""IPython syntax in a notebook cell, neutralised line for line so that a Python parser takes the cell.

- A cell magic on the cell's first line (`%%bash`, `%%writefile train.py`, ...) makes the whole cell
  something other than this notebook's Python: every line of it is neutralised. The cell magics
  whose body is Python run in the notebook's namespace (`%%time`, `%%timeit`, `%%capture`,
  `%%prun`, `%%debug`) lose their first line only, so a training loop under `%%time` is checked.
- At the start of a statement: a line magic (`%matplotlib inline`), a shell command
  (`!pip install ...`), help (`?torch.optim`, `model.fit?`, `model.fit??`) and an assignment from a
  magic or a shell command (`files = !ls`, `t = %timeit -o step()`), with the lines a trailing
  backslash continues it onto.

A neutralised line becomes `pass` at the line's indentation (a magic can be the only statement of
a block), followed by a fixed comment: a magic's own text never reaches the parser, nor the
suppression markers (`# noqa` in a shell command is not a marker). Lines inside brackets or
strings are never touched: `% b` continuing an expression is the modulo operator.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

NEUTRALISED = "pass  # IPython syntax"
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})

_ESCAPED = re.compile(r"[ \t]*(?:[%!?]|[\w.]+(?:[ \t]*,[ \t]*[\w.]+)*[ \t]*=[ \t]*[%!])")
_CELL_MAGIC = re.compile(r"[ \t]*%%(\w*)")
_TRIPLE_QUOTES = ('"""', "'''")


def neutralise(lines: Sequence[str]) -> list[str]:
    """The cell's lines (without line endings), with its IPython syntax replaced; as many lines."""
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        return list(lines)
    cell_magic = _CELL_MAGIC.match(lines[first])
    if cell_magic and cell_magic.group(1) not in PYTHON_CELL_MAGICS:
        return [NEUTRALISED if line.strip() else line for line in lines]
    out = list(lines)
    if cell_magic:
        out[first] = NEUTRALISED
    _neutralise_line_magics(out, start=first + 1 if cell_magic else first)
    return out


def _neutralise_line_magics(lines: list[str], start: int) -> None:
    scanner = _Scanner()
    continued_magic: str | None = None  # the indentation of a magic a backslash continues
    for number in range(start, len(lines)):
        line = lines[number]
        if continued_magic is not None:
            lines[number] = continued_magic + NEUTRALISED
            continued_magic = continued_magic if line.rstrip().endswith("\\") else None
        elif scanner.at_statement_start and _is_escaped(line):
            indentation = line[: len(line) - len(line.lstrip())]
            lines[number] = indentation + NEUTRALISED
            continued_magic = indentation if line.rstrip().endswith("\\") else None
        else:
            scanner.feed(line)


def _is_escaped(line: str) -> bool:
    """Is this line, at the start of a statement, IPython syntax rather than Python?"""
    if _ESCAPED.match(line):
        return True
    code = _Scanner().feed(line)
    return code.endswith("?")  # `model.fit?`: no Python statement ends with a question mark


@dataclass
class _Scanner:
    """Just enough of Python's tokenizer to know whether a line starts a statement: open brackets,
    open strings and backslash continuations carry over from one line to the next."""

    depth: int = 0
    string: str | None = None  # the quotes of a string still open
    continued: bool = False

    @property
    def at_statement_start(self) -> bool:
        return self.depth == 0 and self.string is None and not self.continued

    def feed(self, line: str) -> str:
        """Take one more line; return its code outside strings and comments, stripped."""
        code: list[str] = []
        i, comment = 0, False
        while i < len(line):
            if self.string is not None:
                if line[i] == "\\":
                    i += 2
                elif line.startswith(self.string, i):
                    i += len(self.string)
                    self.string = None
                else:
                    i += 1
                continue
            char = line[i]
            if char == "#":
                comment = True
                break
            if char in "'\"":
                self.string = line[i : i + 3] if line[i : i + 3] in _TRIPLE_QUOTES else char
                i += len(self.string)
                continue
            if char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(0, self.depth - 1)
            code.append(char)
            i += 1
        ends_with_backslash = not comment and line.endswith("\\")
        if self.string in ("'", '"') and not ends_with_backslash:
            self.string = None  # an unterminated one-line string: a syntax error that ends here
        self.continued = self.string is None and ends_with_backslash
        return "".join(code).strip()
