"""gpushare/checks/pools.py: the pools' cross-key problems, each refused on one line naming the key."""

from __future__ import annotations

import pytest

from tests.gpushare.mutations import assert_one_line_names_the_key, set_key

BAD_POOLS = [
    (
        "unknown instance type",
        set_key("gpushare:pools.0.instanceTypes.1", "g5.huge"),
        "gpushare:pools[0].instanceTypes[1]: 'g5.huge' is not in the GPU catalog; allowed: g4dn.xlarge",
    ),
    (
        "type above mock ceiling",
        set_key("gpushare:pools.0.instanceTypes.1", "g5.48xlarge"),
        "gpushare:pools[0].instanceTypes[1]: g5.48xlarge: nvidia.com/gpumem would be 184224 units",
    ),
    (
        "duplicate pool",
        set_key("gpushare:pools.1.name", "g5-shared"),
        "gpushare:pools[1].name: duplicate name 'g5-shared'",
    ),
    (
        "maxGpus below a node",
        lambda raw: raw["gpushare:pools"][0].update(instanceTypes=["g5.xlarge", "g5.12xlarge"], maxGpus=2),
        "gpushare:pools[0].maxGpus: 2 is below the 4 GPUs of g5.12xlarge",
    ),
    (
        "HAMi pool past the mock ceiling",
        set_key("gpushare:pools.0.instanceTypes", ["p5.48xlarge"]),
        "gpushare:pools[0].instanceTypes[0]: p5.48xlarge: nvidia.com/gpumem would be 652472 units per node at "
        "memoryFactor 1, above the mock device plugin's ceiling of 123011 (the kubelet would register 0); memoryFactor "
        "6 or more brings it under; use a smaller type or an exclusive pool",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in BAD_POOLS], ids=[c[0] for c in BAD_POOLS])
def test_bad_pools_names_the_key(mutate, expected):
    assert_one_line_names_the_key(mutate, expected)
