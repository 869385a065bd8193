"""gpushare/checks/quotas.py: quotas beyond supply or admitting nothing, each refused on one line naming the key."""

from __future__ import annotations

import pytest

from tests.gpushare.mutations import assert_one_line_names_the_key, both, set_key

BAD_QUOTAS = [
    (
        "vGPU quota too big",
        set_key("gpushare:teams.1.quota.gpus", 41),
        "gpushare:teams[1].quota.gpus: 41 is more than pools g4dn-shared can ever provide (whole nodes within their "
        "maxGpus); allowed: at most 40",
    ),
    (
        "memory quota too big",
        set_key("gpushare:teams.1.quota.gpuMemoryMib", 61441),
        "gpushare:teams[1].quota.gpuMemoryMib: 61441 is more than pools g4dn-shared can ever provide (whole "
        "nodes within their maxGpus); allowed: at most 61440",
    ),
    (
        "cores quota too big",
        set_key("gpushare:teams.1.quota.gpuCores", 401),
        "gpushare:teams[1].quota.gpuCores: 401 is more than",
    ),
    (
        "time-sliced quota above the pool",
        set_key("gpushare:teams.0.quota.sharedGpus", 9),
        "gpushare:teams[0].quota.sharedGpus: 9 is more than pools g5-shared, g4dn-shared, g6-timeslice can ever "
        "provide (whole nodes within their maxGpus); allowed: at most 8",
    ),
    (
        "time-sliced pool listed with no replica quota",
        set_key("gpushare:teams.0.quota.sharedGpus", 0),
        "gpushare:teams[0].quota.sharedGpus: 0, but the team lists pools g6-timeslice, whose every pod asks "
        "nvidia.com/gpu.shared: none would ever be admitted; allowed: 1 or more, or drop those pools from the team",
    ),
    (
        "HAMi pool listed with no vGPU quota",
        set_key("gpushare:teams.1.quota.gpus", 0),
        "gpushare:teams[1].quota.gpus: 0, but the team lists pools g4dn-shared, whose every pod asks nvidia.com/gpu",
    ),
    (
        "HAMi pool with no GPU memory quota",
        set_key("gpushare:teams.1.quota.gpuMemoryMib", 0),
        "gpushare:teams[1].quota.gpuMemoryMib: 0 (0 nvidia.com/gpumem) refuses every vGPU pod of the team on pools "
        "g4dn-shared, whether it states GPU memory, cores only or neither (HAMi charges GPU memory to each); allowed: "
        "1 or more, or leave the key out (no cap of its own)",
    ),
    (
        "GPU memory quota below one unit of memoryFactor",
        both(set_key("gpushare:hami.profile.memoryFactor", 4), set_key("gpushare:teams.1.quota.gpuMemoryMib", 3)),
        "gpushare:teams[1].quota.gpuMemoryMib: 3 (0 nvidia.com/gpumem) refuses every vGPU pod of the team on pools "
        "g4dn-shared, whether it states GPU memory, cores only or neither (HAMi charges GPU memory to each); allowed: "
        "4 or more",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in BAD_QUOTAS], ids=[c[0] for c in BAD_QUOTAS])
def test_bad_quotas_names_the_key(mutate, expected):
    assert_one_line_names_the_key(mutate, expected)
