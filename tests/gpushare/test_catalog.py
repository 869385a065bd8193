"""The shipped catalog obeys what must hold of any true GPU catalog; bad catalog data is refused by name.

The tests state invariants, not the figures: a wrong or newly added figure breaks one of them, while a
correct edit to the data needs no test change. Each invariant is a function returning what breaks it, run
on the shipped catalog and on a copy broken on purpose.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from itertools import pairwise
from typing import Any

import pytest
import yaml

from gpushare.catalog import CATALOG_PATH, Catalog, CatalogError, parse_catalog

RAW: dict[str, Any] = yaml.safe_load(CATALOG_PATH.read_text())
# NVML reports less than the EC2 figure where ECC or the driver reserves memory (T4: 15360 of 16384 MiB,
# 6.25%) and slightly more where EC2 rounds down (A10G); a larger gap means the wrong GPU or a typo.
NVML_TOLERANCE = 0.07


def families_with_several_gpu_models(catalog: Catalog) -> dict[str, set[str]]:
    models: dict[str, set[str]] = defaultdict(set)
    for itype in catalog.instance_types:
        models[itype.family].add(itype.gpu_model or "none")
    return {family: found for family, found in models.items() if len(found) > 1}


def nvml_far_from_ec2(catalog: Catalog) -> list[str]:
    return [
        f"{m.name}: NVML {m.nvml_memory_mib} vs EC2 {m.ec2_memory_mib} MiB"
        for m in catalog.gpu_models
        if abs(m.nvml_memory_mib - m.ec2_memory_mib) > NVML_TOLERANCE * m.ec2_memory_mib
    ]


def price_drops(catalog: Catalog) -> list[str]:
    """Within a family at equal GPU count, a type with more vCPUs never costs less than a smaller one."""
    groups = defaultdict(list)
    for itype in catalog.instance_types:
        groups[(itype.family, itype.gpu_count)].append(itype)
    drops = []
    for group in groups.values():
        ordered = sorted(group, key=lambda t: t.vcpu)
        for smaller, larger in pairwise(ordered):
            if larger.on_demand_usd_per_hour < smaller.on_demand_usd_per_hour:
                drops.append(f"{larger.name} costs less than {smaller.name}")
    return drops


def shrinking_sizes(catalog: Catalog) -> list[str]:
    """Within a family, more vCPUs never come with less memory."""
    groups = defaultdict(list)
    for itype in catalog.instance_types:
        groups[itype.family].append(itype)
    shrinks = []
    for group in groups.values():
        ordered = sorted(group, key=lambda t: t.vcpu)
        for smaller, larger in pairwise(ordered):
            if larger.memory_mib < smaller.memory_mib:
                shrinks.append(f"{larger.name} has less memory than {smaller.name}")
    return shrinks


def gpu_less_types(catalog: Catalog) -> list[str]:
    return [itype.name for itype in catalog.instance_types if itype.gpu_count == 0]


def unused_gpu_models(catalog: Catalog) -> list[str]:
    used = {itype.gpu_model for itype in catalog.instance_types}
    return [model.name for model in catalog.gpu_models if model.name not in used]


def _edited(path: list[Any], value: Any) -> dict[str, Any]:
    data = copy.deepcopy(RAW)
    target = data
    for step in path[:-1]:
        target = target[step]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


_DELETE = object()


def _index(section: str, name: str) -> int:
    return next(i for i, entry in enumerate(RAW[section]) if entry["name"] == name)


@pytest.mark.parametrize(
    ("invariant", "path", "value", "found"),
    [
        (
            families_with_several_gpu_models,
            ["instanceTypes", _index("instanceTypes", "g5.xlarge"), "gpuModel"],
            "T4",
            "g5",
        ),
        (nvml_far_from_ec2, ["gpuModels", _index("gpuModels", "L4"), "nvmlMemoryMib"], 20000, "L4"),
        (
            price_drops,
            ["instanceTypes", _index("instanceTypes", "g6.2xlarge"), "onDemandUsdPerHour"],
            0.5,
            "g6.2xlarge",
        ),
        (shrinking_sizes, ["instanceTypes", _index("instanceTypes", "g6e.4xlarge"), "memoryMib"], 1024, "g6e.4xlarge"),
        (gpu_less_types, ["instanceTypes", _index("instanceTypes", "p5.48xlarge"), "gpuCount"], 0, "p5.48xlarge"),
        (unused_gpu_models, ["instanceTypes", _index("instanceTypes", "p5.48xlarge"), "gpuModel"], "A10G", "H100"),
    ],
)
def test_invariant_holds_for_the_shipped_catalog_and_catches_a_break(catalog, invariant, path, value, found):
    assert not invariant(catalog)
    edited = _edited(path, value)
    if invariant is gpu_less_types:
        del edited["instanceTypes"][path[1]]["gpuModel"]
    assert found in str(invariant(parse_catalog(edited)))


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (["instanceTypes", 0, "gpuModel"], "V100", "instanceTypes[0] (g4dn.xlarge).gpuModel: unknown GPU model 'V100'"),
        (["gpuModels", 1, "nvmlMemoryMib"], 0, "gpuModels[1].nvmlMemoryMib: 0 is too small; allowed: more than 0 MiB"),
        (["gpuModels", 1, "ec2MemoryMib"], -5, "gpuModels[1].ec2MemoryMib: -5 is too small; allowed: more than 0 MiB"),
        (["instanceTypes", 1, "memoryMib"], 0, "instanceTypes[1].memoryMib: 0 is too small; allowed: more than 0 MiB"),
        (["instanceTypes", 1, "name"], "g4dn.xlarge", "instanceTypes[1].name: duplicate 'g4dn.xlarge'"),
        (["instanceTypes", 2, "gpuModel"], _DELETE, "instanceTypes[2]: gpuCount is 1 but gpuModel is missing"),
        (["instanceTypes", 2, "source"], "blog", "instanceTypes[2].source: unknown source 'blog'"),
        (["gpuModels", 0, "nvmlSource"], "forum", "gpuModels[0].nvmlSource: unknown source 'forum'"),
        (["gpuModels", 0, "vendor"], "nvidia", "gpuModels[0].vendor: unknown key"),
    ],
)
def test_bad_catalog_data_names_entry_and_field(path, value, message):
    with pytest.raises(CatalogError) as caught:
        parse_catalog(_edited(path, value))
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
