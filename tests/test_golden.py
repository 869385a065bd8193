"""The rendered dev and prod stacks equal the reviewed golden files. Update with `make golden`."""

from __future__ import annotations

import pytest

from tools.golden import GOLDEN, STACKS, render_golden


@pytest.mark.parametrize("stack", STACKS)
def test_rendered_stack_matches_golden_files(stack):
    for name, content in render_golden(stack).items():
        expected = (GOLDEN / stack / name).read_text()
        assert content == expected, f"tests/golden/{stack}/{name} is stale: run `make golden` and review the diff"
