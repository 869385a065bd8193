"""The offline plan of the dev and prod stacks equals the reviewed golden files. Update with `make golden`.

The plans compared are the session's shipped plans: `make plan` for the fixed day, which writes manifests/ and helm/
as `make golden` does (the same build_plan and write_plan)."""

from __future__ import annotations

import pytest

from tools.golden import STACKS, golden_files, plan_folder_files


@pytest.mark.parametrize("stack", STACKS)
def test_offline_plan_matches_golden_files(plans, stack):
    planned, golden = plan_folder_files(plans[stack]["_folder"]), golden_files(stack)
    stale = sorted(name for name in planned.keys() | golden.keys() if planned.get(name) != golden.get(name))
    assert not stale, f"tests/golden/{stack}: {', '.join(stale)} differ from the plan: run `make golden`, read the diff"
