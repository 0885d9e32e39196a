"""Every Python example of docs/library.md runs, and its assertions hold."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import consumer

LIBRARY_DOC = Path(__file__).resolve().parents[2] / "docs" / "library.md"
EXAMPLES = re.findall(r"```python\n(.*?)```", LIBRARY_DOC.read_text(), flags=re.DOTALL)


def test_the_document_has_examples() -> None:
    assert len(EXAMPLES) >= 4


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"example-{i}" for i in range(len(EXAMPLES))])
def test_example_runs(example: str) -> None:
    assert "assert" in example  # an example that checks nothing proves nothing
    exec(compile(example, str(LIBRARY_DOC), "exec"), {"__name__": "library_example"})


def test_the_examples_use_only_the_public_api() -> None:
    imported: set[str] = set()
    for example in EXAMPLES:
        for names in re.findall(r"^from consumer import (.+)$", example, flags=re.MULTILINE):
            imported.update(name.strip() for name in names.split(","))
    assert imported <= set(consumer.__all__)
