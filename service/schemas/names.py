"""The names a request may give a repository and a branch: one rule each, the same at every
door (a result document, a job queued through the API, a push or pull request from GitHub, an
import), so that nothing is queued that no result document could carry.

A repository is `owner/name` (or one name, or deeper paths of a self-hosted forge): letters,
digits, `_`, `.` and `-` per segment, no segment `.` or `..` (a name is part of paths and URLs:
`../../etc/passwd` is none). A branch is what `git check-ref-format --branch` admits, at most 255
characters (the width of the branch columns).
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, StringConstraints, WithJsonSchema

REPOSITORY_PATTERN = r"^[\w.-]+(/[\w.-]+)*$"


def _repository(name: str) -> str:
    if any(segment in (".", "..") for segment in name.split("/")):
        raise ValueError(f"{name[:80]!r}: a repository name has no segment '.' or '..'")
    return name


RepositoryName = Annotated[
    str,
    StringConstraints(pattern=REPOSITORY_PATTERN, min_length=1, max_length=200),
    AfterValidator(_repository),
]

Branch = Annotated[str, StringConstraints(max_length=255)]  # the width of the branch columns
BRANCH_PATTERN = (
    r"^(?!/)(?!.*//)(?!.*\.\.)(?!.*@\{)(?!.*\.lock$)[^\x00-\x20~^:?*\[\\\x7f]{1,255}(?<![/.])$"
)
_BRANCH = re.compile(BRANCH_PATTERN)
# The rule as the OpenAPI description says it (a generated client, schemathesis): Python's
# re checks it; pydantic's own regex engine has no lookaround.
BRANCH_SCHEMA = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": BRANCH_PATTERN}


def _git_branch(branch: str) -> str:
    if not _BRANCH.match(branch):
        raise ValueError(f"{branch[:80]!r} is not a valid git branch name")
    return branch


# What `git check-ref-format --branch` admits.
GitBranch = Annotated[Branch, AfterValidator(_git_branch), WithJsonSchema(BRANCH_SCHEMA)]


def branch_refusal(branch: str) -> str | None:
    """Why `branch` is no branch a result document can carry; None where it is one."""
    if len(branch) > 255:
        return f"{branch[:80]!r}... is over 255 characters"
    try:
        _git_branch(branch)
    except ValueError as exc:
        return str(exc)
    return None
