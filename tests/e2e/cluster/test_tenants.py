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


@pytest.mark.plan
def test_a_tenant_copies_its_teams_and_every_pool_they_list(rig) -> None:
    plan, tenants = rig
    assert dict(tenants["ab"].teams) == {"inference": "inference-ab"}
    assert dict(tenants["ab"].pools) == {"g4dn-shared": "ab0"}
    assert dict(tenants["cd"].pools) == {"g4dn-shared": "cd0", "g5-shared": "cd1", "g6-timeslice": "cd2"}
    pools = plan.pool_instance_types()
    assert {"g4dn-shared", "g5-shared", "g6-timeslice", "ab0", "cd0", "cd1", "cd2"} <= set(pools)
    assert pools["ab0"] == pools["g4dn-shared"]


@pytest.mark.plan
def test_the_copies_are_rendered_like_the_originals(rig) -> None:
    """Quota, limits and admission bound of a copy equal the original's, under the copy's names."""
    plan, _ = rig
    quotas = {q["metadata"]["namespace"]: q["spec"] for q in plan.of_kind("ResourceQuota")}
    assert quotas["inference-ab"] == quotas["inference"]
    limits = {p["metadata"]["name"]: p["spec"]["limits"] for p in plan.of_kind("NodePool")}
    assert limits["ab0"] == limits["g4dn-shared"]
    pools = plan.namespace("inference-cd")["metadata"]["annotations"][names.TEAM_POOLS_ANNOTATION]
    assert pools == "cd0"
    overlays = [o for o in plan.of_kind("NodeOverlay") if o["metadata"]["labels"][names.POOL_LABEL] == "cd1"]
    assert len(overlays) == len(plan.pool_instance_types()["g5-shared"])


def test_a_tenant_owns_its_copies_and_the_pool_it_may_add() -> None:
    _, [tenant] = with_tenants(stack_file("dev"), {"ab": ("inference",)})
    assert tenant.owns("ab0") and tenant.owns(tenant.extra_pool)
    assert not tenant.owns("g4dn-shared") and not STACK.owns("ab0")


# kwok's node name beyond its pool's name: `kwok-`, `-<5>` of the NodeClaim, two random words (21 letters together at
# most but for fewer than 1 draw in 20,000: github.com/Pallinder/go-randomdata v1.2.0 word lists), a sequence number
# below 1000, 10 random characters, a uint32 and five dashes.
KWOK_NAME_BEYOND_POOL = 5 + 6 + 21 + 3 + 10 + 10 + 4
LABEL_VALUE_MAX = 63


def test_pool_copies_keep_kwok_node_names_within_a_label_value() -> None:
    """HAMi labels the pods it places with their node's name: a copy's nodes must have names a label value holds."""
    _, tenants = with_tenants(stack_file("dev"), {"khd": ("ml-research", "inference")})
    assert all(len(pool) + KWOK_NAME_BEYOND_POOL <= LABEL_VALUE_MAX for t in tenants for pool in t.pools.values())


def test_a_tenant_whose_names_are_taken_is_refused() -> None:
    document = stack_file("dev")
    document["config"]["gpushare:pools"][0]["name"] = "ab0"
    with pytest.raises(ValueError, match="tenant ab: ab0 already named in the stack"):
        with_tenants(document, {"ab": ("ml-research",)})


def test_the_stack_file_given_is_not_changed(tmp_path: Path) -> None:
    original = stack_file("dev")
    with_tenants(original, {"ab": ("inference",)})
    assert original == stack_file("dev")


def test_a_tenant_sets_keys_on_its_copies_only() -> None:
    """warm-headroom's copy of inference asks for headroom; the original and the other tenants' copies do not."""
    headroom = {"pods": 2, "shape": {"gpuMemoryMib": 5120, "gpuCores": 33}}
    document, _ = with_tenants(
        stack_file("dev"), {"ab": ("inference",), "cd": ("inference",)}, {"ab": {"inference": {"headroom": headroom}}}
    )
    teams = {team["name"]: team for team in document["config"]["gpushare:teams"]}
    assert teams["inference-ab"]["headroom"] == headroom
    assert "headroom" not in teams["inference"] and "headroom" not in teams["inference-cd"]
