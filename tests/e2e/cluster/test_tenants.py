"""Tenants: copies of the stack's teams and pools that the real program renders like the originals."""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e.cluster.stack import plan_of, stack_file
from e2e.cluster.tenants import STACK, with_tenants
from gpushare import names


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory):
    document, tenants = with_tenants(stack_file("dev"), {"ab": ("inference",), "cd": ("ml-research", "inference")})
    return plan_of("rig", document, tmp_path_factory.mktemp("rig")), {t.name: t for t in tenants}


def test_a_tenant_copies_its_teams_and_every_pool_they_list(rig) -> None:
    plan, tenants = rig
    assert dict(tenants["ab"].teams) == {"inference": "inference-ab"}
    assert dict(tenants["ab"].pools) == {"g4dn-shared": "g4dn-shared-ab"}
    assert set(tenants["cd"].pools.values()) == {"g5-shared-cd", "g4dn-shared-cd", "g6-timeslice-cd"}
    pools = plan.pool_instance_types()
    assert {"g4dn-shared", "g5-shared", "g6-timeslice", "g4dn-shared-ab", "g5-shared-cd"} <= set(pools)
    assert pools["g4dn-shared-ab"] == pools["g4dn-shared"]


def test_the_copies_are_rendered_like_the_originals(rig) -> None:
    """Quota, limits and admission bound of a copy equal the original's, under the copy's names."""
    plan, _ = rig
    quotas = {q["metadata"]["namespace"]: q["spec"] for q in plan.of_kind("ResourceQuota")}
    assert quotas["inference-ab"] == quotas["inference"]
    limits = {p["metadata"]["name"]: p["spec"]["limits"] for p in plan.of_kind("NodePool")}
    assert limits["g4dn-shared-ab"] == limits["g4dn-shared"]
    pools = plan.namespace("inference-cd")["metadata"]["annotations"][names.TEAM_POOLS_ANNOTATION]
    assert pools == "g4dn-shared-cd"
    overlays = [o for o in plan.of_kind("NodeOverlay") if o["metadata"]["labels"][names.POOL_LABEL] == "g5-shared-cd"]
    assert len(overlays) == len(plan.pool_instance_types()["g5-shared"])


def test_ownership_follows_the_name() -> None:
    _, [tenant] = with_tenants(stack_file("dev"), {"ab": ("inference",)})
    assert tenant.owns("g4dn-shared-ab") and tenant.owns("rig-exclusive-ab")
    assert not tenant.owns("g4dn-shared") and not STACK.owns("g4dn-shared-ab")


def test_a_tenant_named_like_the_end_of_a_name_is_refused() -> None:
    with pytest.raises(ValueError, match="g5-shared ends like tenant shared"):
        with_tenants(stack_file("dev"), {"shared": ("inference",)})


def test_the_stack_file_given_is_not_changed(tmp_path: Path) -> None:
    original = stack_file("dev")
    with_tenants(original, {"ab": ("inference",)})
    assert original == stack_file("dev")
