"""Changes that break `capacity-buffer-fits-hami-gpus`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import find, messages, resources_of
from tests.policies.rules.breaking import caught, pool

BUFFER = "gpushare-headroom-g5-shared"
POLICY = "capacity-buffer-fits-hami-gpus"


def resources(r):
    return find(r, "PodTemplate", BUFFER)["template"]["spec"]["containers"][0]["resources"]


def ask(r, **amounts):
    """Set (a value) or drop (None) GPU resources of the template's container, as requests and limits."""
    for side in ("requests", "limits"):
        for name, value in amounts.items():
            resources(r)[side].pop(f"nvidia.com/{name}", None)
            if value is not None:
                resources(r)[side][f"nvidia.com/{name}"] = value


def fragmenting(r):
    """7000 MiB and 25% on g5-shared with a 4-GPU type: Karpenter counts 13 per g5.12xlarge (92112 / 7000), HAMi
    places 12 (3 on each A10G)."""
    ask(r, gpumem="7000", gpucores="25")
    pool(r)["spec"]["template"]["spec"]["requirements"][0]["values"].append("g5.12xlarge")


KEY = "PodTemplate gpushare-headroom-g5-shared: template.spec.containers[0].resources"
# (policy, change, every fragment one message must contain), on the prod plan
PROD_CASES = {
    "more memory than one GPU": (
        POLICY,
        lambda r: ask(r, gpumem="30000"),
        [f'{KEY} nvidia.com/gpumem is "30000"', "largest GPU of pool g5-shared holds 23028", "ask at most 23028"],
    ),
    "more cores than one GPU": (
        POLICY,
        lambda r: ask(r, gpucores="150"),
        [f'{KEY} nvidia.com/gpucores is "150"', "ask at most 100"],
    ),
    "more vGPUs than a node has GPUs": (
        POLICY,
        lambda r: ask(r, gpu="2"),
        [f'{KEY} nvidia.com/gpu is "2"', "no node of pool g5-shared has more than 1"],
    ),
    "cores without memory": (
        POLICY,
        lambda r: ask(r, gpumem=None),
        ["asks nvidia.com/gpucores 33 without nvidia.com/gpumem", "a whole GPU's memory"],
    ),
    "neither cores nor memory": (
        POLICY,
        lambda r: ask(r, gpumem=None, gpucores=None),
        ["HAMi's webhook gives the team's real pods nvidia.com/gpucores: 100", "virtual pods skip admission"],
    ),
    "fragmented GPUs": (
        POLICY,
        fragmenting,
        ["fragment the GPUs of g5.12xlarge in pool g5-shared", "Karpenter counts 13", "HAMi places 12"],
    ),
}


@pytest.mark.parametrize("case", list(PROD_CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["prod"], case, PROD_CASES[case])


def test_a_whole_gpu_stated_as_the_webhook_would_is_placed_alike(plans):
    r = resources_of(plans["prod"])
    ask(r, gpumem=None, gpucores="100")
    assert messages(r, POLICY) == []


def test_a_shape_that_divides_every_gpu_never_fragments(plans):
    """7676 MiB is a third of an A10G: 3 per GPU on the 4-GPU type too, 12 either way."""
    r = resources_of(plans["prod"])
    pool(r)["spec"]["template"]["spec"]["requirements"][0]["values"].append("g5.12xlarge")
    assert messages(r, POLICY) == []
