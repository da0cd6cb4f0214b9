"""Names as the service stores them: a kernel's within its 1,000 characters."""

from __future__ import annotations

import hashlib

MAX_KERNEL_NAME = 1000  # the service's limit on a kernel name


def document_kernel_name(name: str) -> str:
    """A kernel name within the service's 1000 characters, distinct names staying distinct."""
    if len(name) <= MAX_KERNEL_NAME:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:16]
    return f"{name[: MAX_KERNEL_NAME - 20]}...#{digest}"
