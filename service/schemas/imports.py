"""What an import names: the tool's format and the commit its results belong to."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from service.schemas.document import Sha, UtcDatetime
from service.schemas.names import GitBranch, RepositoryName

ImportFormat = Literal["gbench", "nvbench"]


class ImportCreate(BaseModel):
    """An import's target, checked alike by the API's query and the CLI's flags."""

    model_config = ConfigDict(extra="forbid")

    format: ImportFormat
    repository: RepositoryName
    commit: Sha
    branch: GitBranch = "main"
    committed_at: UtcDatetime | None = None
