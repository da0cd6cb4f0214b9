"""Service configuration, read from KERNELWATCH_* environment variables."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, AnyHttpUrl, BaseModel, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


class WebhookTarget(BaseModel):
    """One outgoing webhook: where (a secret: Slack's URLs hold their token, and the URL is never
    logged; the name stands for it), in which form, for which branches."""

    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.-]+$")
    url: SecretStr
    format: Literal["slack", "json"] = "json"
    branches: list[str] | None = Field(
        default=None, description="branches whose events it gets; default: notify_branches"
    )

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: SecretStr) -> SecretStr:
        AnyHttpUrl(url.get_secret_value())  # refuses what is not an http(s) URL
        return url


def _log_level(value: str) -> str:
    """One of the logging module's levels, in any case (INFO, debug, ...)."""
    if value.upper() not in ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG"):
        raise ValueError(f"{value!r} is none of CRITICAL, ERROR, WARNING, INFO, DEBUG")
    return value.upper()


class Settings(BaseSettings):
    """Everything the service reads from its environment."""

    model_config = SettingsConfigDict(env_prefix="KERNELWATCH_", extra="ignore")

    data_dir: Path = Field(default=Path(".kernelwatch"), description="Where the SQLite file lives")
    database_url: str | None = Field(
        default=None, description="SQLAlchemy URL; default is SQLite under data_dir"
    )
    admin_token: str | None = Field(default=None, description="Bearer token for admin routes")
    read_token: str | None = Field(
        default=None,
        description="when set, every GET but /healthz needs it (or the admin token) as a Bearer "
        "token; unset, reads are public",
    )
    webhook_secret: str | None = None
    database_connect_timeout_seconds: float = Field(
        default=5.0, gt=0, description="PostgreSQL: give up opening a connection after this"
    )
    database_statement_timeout_seconds: float = Field(
        default=30.0, gt=0, description="PostgreSQL: cancel a statement after this"
    )
    database_pool_timeout_seconds: float = Field(
        default=10.0, gt=0, description="wait this long for a free pooled connection"
    )
    healthz_min_free_bytes: int = Field(
        default=100 << 20, ge=0, description="/healthz: 503 below this much free disk in data_dir"
    )
    idle_timeout_seconds: float = Field(
        default=30.0, gt=0, description="close a connection idle this long mid-request"
    )
    header_timeout_seconds: float = Field(
        default=10.0, gt=0, description="a request's headers must be in within this"
    )
    body_min_bytes_per_second: float = Field(
        default=64 * 1024.0,
        gt=0,
        description="a body must arrive within the header timeout plus its length at this rate "
        "(else 408)",
    )
    body_deadline_seconds: float = Field(
        default=60.0, gt=0, description="a body's deadline, whatever its declared length (408)"
    )
    max_body_bytes: int = Field(default=32 * 1024 * 1024, gt=0)
    webhook_max_bytes: int = Field(default=25 * 1024 * 1024, gt=0)
    clone_url_schemes: Annotated[list[str], NoDecode] = Field(
        default=["https", "ssh"],
        description="URL schemes of the clone URLs runners are handed, comma-separated (e.g. "
        "https,ssh); others are refused where they enter",
    )
    allow_local_clone_urls: bool = Field(
        default=False, description="allow local paths (and file://) as clone URLs"
    )
    queue_every_commit: bool = Field(
        default=False, description="queue every commit of a push, not only its head"
    )
    cancel_superseded: bool = Field(
        default=True, description="a newer push cancels the branch's still-queued jobs"
    )
    lease_seconds: int = Field(default=600, gt=0, description="how long a claim lasts unextended")
    max_attempts: int = Field(default=3, gt=0, description="claims of a job before it fails")
    reaper_interval_seconds: float = Field(default=30.0, ge=0, description="0 disables it")
    analyse_in_request: bool = Field(
        default=False,
        description="decide a run's verdicts and alerts before POST /api/v1/runs answers "
        "(change points still follow); by default they follow within about a second",
    )
    analysis_delay_seconds: float = Field(
        default=1.0,
        ge=0,
        description="quiet time after a run is stored before the backlog is analysed, so that "
        "a burst of runs is stored at full speed and costs one change-point re-segmentation",
    )
    analysis_poll_seconds: float = Field(
        default=10.0,
        ge=0,
        description="how often the analysis backlog is checked for runs that other service "
        "processes stored; 0 disables the worker",
    )
    log_level: Annotated[str, AfterValidator(_log_level)] = "INFO"
    github_token: SecretStr | None = Field(
        default=None, description="token with commit-status write access; unset: no statuses"
    )
    github_api_url: str = Field(default="https://api.github.com", description="GitHub REST API")
    github_timeout_seconds: float = Field(default=10.0, gt=0, description="per GitHub request")
    public_url: str | None = Field(
        default=None, description="this service's URL, for links back (commit status targets)"
    )
    notify_webhooks: list[WebhookTarget] = Field(
        default_factory=list,
        description='outgoing webhooks, JSON: [{"name": "team-chat", "url": "https://...", '
        '"format": "slack" | "json", "branches": ["main"]}]',
    )
    notify_branches: list[str] = Field(
        default_factory=lambda: ["main", "master"],
        description='the watched branches whose events are sent ("*": all)',
    )
    notify_poll_seconds: float = Field(default=2.0, gt=0, description="how often events are sent")
    notify_max_attempts: int = Field(
        default=8, ge=1, description="tries of an event before it is dropped"
    )
    notify_timeout_seconds: float = Field(default=10.0, gt=0, description="per webhook request")

    @field_validator("clone_url_schemes", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part.strip().lower() for part in value.split(",") if part.strip()]
        return value

    @field_validator("public_url")
    @classmethod
    def _public_url(cls, url: str | None) -> str | None:
        """An http(s) address or none: GitHub refuses a commit status whose link is no URL, so a
        typo here failed every status the service sent."""
        if not url or not url.strip():
            return None
        try:
            AnyHttpUrl(url.strip())
        except ValueError:
            raise ValueError(
                f"{url[:100]!r} is not an http(s) URL: give this service's address as people "
                "reach it, e.g. https://kernelwatch.example.com"
            ) from None
        return url.strip()

    @field_validator("database_url")
    @classmethod
    def _psycopg_driver(cls, url: str | None) -> str | None:
        scheme = (url or "").split("://", 1)[0].split("+", 1)[0].lower() if url else None
        if url and ("://" not in url or scheme not in ("sqlite", "postgresql", "postgres")):
            shown = f"a {scheme}:// URL" if "://" in url else "no URL"
            raise ValueError(
                f"{shown}: kernelwatch keeps its data in SQLite (sqlite:///path/kernelwatch.db) "
                "or PostgreSQL (postgresql://user:password@host:5432/database)"
            )
        # Users write postgresql://... (or POSTGRES://, or name a driver: postgresql+psycopg2://);
        # SQLAlchemy would pick psycopg2, which we do not ship: every PostgreSQL URL takes psycopg.
        if url and scheme in ("postgresql", "postgres"):
            return "postgresql+psycopg://" + url.split("://", 1)[1]
        if url and scheme == "sqlite":
            return "sqlite" + url[len(url.split("://", 1)[0].split("+", 1)[0]) :]
        return url

    @property
    def effective_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'kernelwatch.db').resolve()}"

    @property
    def is_sqlite(self) -> bool:
        return self.effective_database_url.startswith("sqlite")
