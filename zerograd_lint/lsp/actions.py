"""Code actions: the quick fixes an editor offers on a diagnostic of ours (a light bulb, Ctrl+.).

- "Fix ZG001: <what the fix does>" (`quickfix`, preferred): the edit `zerograd-lint --fix` would
  make for that finding, made as `--fix` makes it (the document's project checked again with it),
  so it is offered only where `--fix` would make it.
- "Add `# noqa: ZG001` on this line" (`quickfix`): the comment `--add-noqa` would add.

Both are worked out when the editor asks, for the document's text then; the server applies
nothing itself. A diagnostic is matched to its finding by code and 1-based position, which the
server puts in each diagnostic's `data` when it publishes it.
"""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types
from pygls.workspace import PositionCodec

from zerograd_lint.codes import RULES
from zerograd_lint.findings import Edit, Finding
from zerograd_lint.lines import split_lines
from zerograd_lint.lsp.diagnostics import SOURCE, position


def code_actions(uri: str, text: str, asked: Sequence[types.Diagnostic], fixed: Sequence[Finding],
                 codec: PositionCodec) -> list[types.CodeAction]:
    """The quick fixes for the diagnostics `asked` about: `fixed` are the document's findings
    that `--fix` fixes, each with its edits (a fix that edits another file, a helper's module, is
    left to `--fix`)."""
    lines = split_lines(text)
    by_place = {(f.code, f.line, f.column): f for f in fixed if f.fix is not None and f.fix.path is None}
    actions = []
    for diagnostic in asked:
        place = _place(diagnostic)
        if place is None:
            continue
        finding = by_place.get(place)
        if finding is not None and finding.fix is not None:
            edits = [_text_edit(edit, lines, codec) for edit in finding.fix.edits]
            actions.append(types.CodeAction(
                title=f"Fix {finding.code}: {finding.fix.message}", kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic], is_preferred=True, edit=types.WorkspaceEdit(changes={uri: edits}),
            ))
        noqa = _noqa_edit(text, lines, place, codec)
        if noqa is not None:
            actions.append(types.CodeAction(
                title=f"Add `# noqa: {place[0]}` on this line", kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic], edit=types.WorkspaceEdit(changes={uri: [noqa]}),
            ))
    return actions


def _place(diagnostic: types.Diagnostic) -> tuple[str, int, int] | None:
    given = diagnostic.data
    if diagnostic.source != SOURCE or not isinstance(given, dict):
        return None
    code, line, column = given.get("code"), given.get("line"), given.get("column")
    if code not in RULES or not isinstance(line, int) or not isinstance(column, int):
        return None
    return code, line, column


def _text_edit(edit: Edit, lines: Sequence[str], codec: PositionCodec) -> types.TextEdit:
    return types.TextEdit(range=types.Range(start=position(*edit.start, lines, codec),
                                            end=position(*edit.end, lines, codec)), new_text=edit.content)


def _noqa_edit(text: str, lines: Sequence[str], place: tuple[str, int, int],
               codec: PositionCodec) -> types.TextEdit | None:
    from zerograd_lint.fix.noqa import noqa_added

    code, line, _ = place
    if code == "ZG100":  # a noqa for an unused marker: remove the marker instead
        return None
    added = noqa_added(text, {line: {code}})
    if added is None or not added[1]:
        return None
    new_line = split_lines(added[0])[line - 1]
    old = lines[line - 1]
    return types.TextEdit(range=types.Range(start=position(line, 1, lines, codec),
                                            end=position(line, len(old) + 1, lines, codec)), new_text=new_line)
