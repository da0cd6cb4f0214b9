"""service/models/job.py on the migrated database: the job states; a job written with only its
repository, commit and branch is a queued run on its first attempt of three that any runner may
claim (no labels, an empty label key); a job outlives the runner that held it; a webhook delivery
is recorded once per X-GitHub-Delivery, and one recorded without an outcome was "done" (nothing
to queue), what deliveries from before the outcome column read back."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from service.models import Job, Repository, Runner, WebhookDelivery
from service.models.job import JOB_STATES
from tests.service.models.conftest import T0, added, insert_bare


def test_the_job_states_in_their_order() -> None:
    assert JOB_STATES == ("queued", "running", "succeeded", "failed", "cancelled")


def test_a_new_job_is_a_queued_run_any_runner_may_claim(session: Session, repo: Repository) -> None:
    job = added(session, Job(repository_id=repo.id, commit_sha="a" * 40, branch="main"))
    session.commit()
    session.expire_all()
    read = session.get(Job, job.id)
    assert (read.kind, read.state) == ("run", "queued")
    assert (read.attempt, read.max_attempts) == (0, 3)
    assert (read.required_labels, read.label_key, read.payload) == ({}, "", {})
    assert (read.runner_id, read.lease_expires_at, read.started_at) == (None, None, None)
    assert read.created_at.tzinfo is not None


def test_a_job_outlives_the_runner_that_held_it(session: Session, repo: Repository) -> None:
    runner = added(session, Runner(name="r"))
    job = added(session, Job(repository_id=repo.id, commit_sha="a" * 40, branch="main",
                             state="running", runner_id=runner.id))  # fmt: skip
    session.delete(runner)
    session.flush()
    session.refresh(job)
    assert (job.runner_id, job.state) == (None, "running")  # only the link is cleared


def test_a_delivery_is_recorded_once(session: Session) -> None:
    added(session, WebhookDelivery(delivery_id="d-1", event="push"))
    with pytest.raises(IntegrityError):
        added(session, WebhookDelivery(delivery_id="d-1", event="push"))
    session.rollback()


def test_a_delivery_recorded_without_an_outcome_was_done(session: Session) -> None:
    delivery = added(session, WebhookDelivery(delivery_id="d-1", event="ping"))
    assert (delivery.outcome, delivery.job_ids, delivery.detail) == ("done", [], "")
    pk = insert_bare(session, "webhook_deliveries", delivery_id="d-2", event="push", detail="",
                     job_ids=[3], received_at=T0)  # fmt: skip
    assert session.get(WebhookDelivery, pk).outcome == "done"
