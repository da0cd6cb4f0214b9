"""What an import names: the tool's format and the commit its results belong to."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, StringConstraints

from service.schemas.document import GitBranch, Sha, UtcDatetime

ImportFormat = Literal["gbench", "nvbench"]
RepositoryName = Annotated[
    str, StringConstraints(pattern=r"^[\w.-]+(/[\w.-]+)*$", min_length=1, max_length=200)
]


class ImportCreate(BaseModel):
    """An import's target, checked alike by the API's query and the CLI's flags."""

    model_config = ConfigDict(extra="forbid")

    format: ImportFormat
    repository: RepositoryName
    commit: Sha
    branch: GitBranch = "main"
    committed_at: UtcDatetime | None = None
