"""{{name}}: an agent-ledger property, built into a WASI Preview 2 component
by componentize-py (see README.md).

It misses when the patch deletes a test file: a path under the configured
test globs (`[tests] globs` in agent-ledger.toml, handed over as the
`test_globs` configuration) that the patch deletes or renames away, and that
is really gone from `/patched`, the tree after the patch.
"""

import os

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports.agent_ledger_property_types import (
    ChangeKind,
    Finding,
    Info,
    Outcome,
    Outcome_Holds,
    Outcome_Miss,
    Trial,
)


class Property(exports.Property):
    def describe(self) -> Info:
        return Info(
            name="{{name}}",
            version="0.1.0",
            summary="no test file under the configured test globs is deleted",
        )

    def check(self, trial: Trial) -> Outcome:
        globs = test_globs(trial)
        if not globs:
            # An `err` result: agent-ledger records `error`, never `holds`.
            raise Err("configuration `test_globs` is empty: nothing to protect")
        findings = []
        for change in trial.changes:
            if change.kind == ChangeKind.DELETED:
                gone = change.path
            elif change.kind == ChangeKind.RENAMED and change.old_path is not None:
                gone = change.old_path
            else:
                continue
            if not any(glob_match(g, gone) for g in globs):
                continue
            # The patched tree is mounted read-only at /patched.
            if not os.path.lexists("/patched/" + gone):
                findings.append(
                    Finding(path=gone, line=None, message="test file deleted", frozen=False)
                )
        if findings:
            return Outcome_Miss(findings)
        return Outcome_Holds([])


def test_globs(trial: Trial) -> list[str]:
    """The `test_globs` configuration: one glob per line."""
    for key, value in trial.config:
        if key == "test_globs":
            return [line.strip() for line in value.splitlines() if line.strip()]
    return []


def glob_match(pattern: str, path: str) -> bool:
    """`*` and `?` stay inside one path segment; `**` spans any number."""
    return _segments(pattern.split("/"), path.split("/"))


def _segments(pat: list[str], segs: list[str]) -> bool:
    if not pat:
        return not segs
    if pat[0] == "**":
        return any(_segments(pat[1:], segs[i:]) for i in range(len(segs) + 1))
    return bool(segs) and _segment(pat[0], segs[0]) and _segments(pat[1:], segs[1:])


def _segment(p: str, s: str) -> bool:
    if not p:
        return not s
    if p[0] == "*":
        return any(_segment(p[1:], s[i:]) for i in range(len(s) + 1))
    if p[0] == "?":
        return bool(s) and _segment(p[1:], s[1:])
    return bool(s) and s[0] == p[0] and _segment(p[1:], s[1:])
