"""One registry of import formats: the API's and the CLI's formats are its entries, and each
entry reads its own kind of file and refuses another kind in one clear error."""

from __future__ import annotations

import json
from typing import get_args

import pytest

from service.runs.imports import ImportFileError
from service.runs.imports.formats import FORMATS
from service.schemas.imports import ImportFormat


def test_the_api_names_exactly_the_registered_formats() -> None:
    assert sorted(get_args(ImportFormat)) == sorted(FORMATS)


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_each_format_refuses_a_file_that_is_not_its_own(name: str) -> None:
    with pytest.raises(ImportFileError):
        FORMATS[name].read(json.dumps({"not": "a benchmark file"}).encode(), None)
    with pytest.raises(ImportFileError):
        FORMATS[name].read(b"\xff not json", None)
