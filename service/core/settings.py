"""Service configuration, read from KERNELWATCH_* environment variables."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Everything the service reads from its environment."""

    model_config = SettingsConfigDict(env_prefix="KERNELWATCH_", extra="ignore")

    data_dir: Path = Field(default=Path(".kernelwatch"), description="Where the SQLite file lives")
    database_url: str | None = Field(
        default=None, description="SQLAlchemy URL; default is SQLite under data_dir"
    )
    admin_token: str | None = Field(default=None, description="Bearer token for admin routes")
    webhook_secret: str | None = None
    max_body_bytes: int = Field(default=32 * 1024 * 1024, gt=0)
    max_samples_per_result: int = Field(default=100_000, gt=0)
    log_level: str = "INFO"

    @field_validator("database_url")
    @classmethod
    def _psycopg_driver(cls, url: str | None) -> str | None:
        # Users write postgresql://...; SQLAlchemy would pick psycopg2, which we do not ship.
        if url and url.startswith(("postgresql://", "postgres://")):
            return "postgresql+psycopg://" + url.split("://", 1)[1]
        return url

    @property
    def effective_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'kernelwatch.db').resolve()}"

    @property
    def is_sqlite(self) -> bool:
        return self.effective_database_url.startswith("sqlite")
