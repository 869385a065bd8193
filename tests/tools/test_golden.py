"""The offline plan of the dev and prod stacks equals the reviewed golden files. Update with `make golden`."""

from __future__ import annotations

import pytest

from tools.golden import STACKS, golden_files, plan_files


@pytest.mark.parametrize("stack", STACKS)
def test_offline_plan_matches_golden_files(stack):
    planned, golden = plan_files(stack), golden_files(stack)
    stale = sorted(name for name in planned.keys() | golden.keys() if planned.get(name) != golden.get(name))
    assert not stale, f"tests/golden/{stack}: {', '.join(stale)} differ from the plan: run `make golden`, read the diff"
