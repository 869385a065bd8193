"""The shipped catalog is complete and consistent; bad catalog data is refused with entry and field."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from gpushare.catalog import CATALOG_PATH, CatalogError, parse_catalog

RAW: dict[str, Any] = yaml.safe_load(CATALOG_PATH.read_text())

EXPECTED_SIZES = {
    "g4dn": {"xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "metal"},
    "g5": {"xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"},
    "g6": {"xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"},
    "g6e": {"xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"},
    "p4d": {"24xlarge"},
    "p5": {"48xlarge"},
}


def test_catalog_covers_every_size_the_stack_offers(catalog):
    sizes: dict[str, set[str]] = {}
    for itype in catalog.instance_types:
        sizes.setdefault(itype.family, set()).add(itype.size)
    assert sizes == EXPECTED_SIZES


def test_every_instance_type_has_gpus_of_a_known_model(catalog):
    for itype in catalog.instance_types:
        assert itype.gpu_count > 0, itype.name
        assert catalog.gpu_model_of(itype).name == itype.gpu_model


@pytest.mark.parametrize(
    ("model", "nvml", "ec2"),
    [
        ("T4", 15360, 16384),
        ("A10G", 23028, 22888),
        ("L4", 23034, 22888),
        ("L40S", 46068, 45776),
        ("A100-SXM4-40GB", 40960, 40960),
        ("H100-SXM-80GB", 81559, 81920),
    ],
)
def test_gpu_memory_figures_match_domain_facts(catalog, model, nvml, ec2):
    found = next(m for m in catalog.gpu_models if m.name == model)
    assert (found.nvml_memory_mib, found.ec2_memory_mib) == (nvml, ec2)


def test_prices_carry_region_date_and_source(catalog):
    assert catalog.prices.region == "us-east-1"
    assert catalog.prices.date == "2026-07-20"
    assert catalog.prices.source in catalog.sources
    assert catalog.instance_type("g5.xlarge").on_demand_usd_per_hour == 1.006


def _broken(path: list[Any], value: Any) -> dict[str, Any]:
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


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (["instanceTypes", 0, "gpuModel"], "V100", "instanceTypes[0] (g4dn.xlarge).gpuModel: unknown GPU model 'V100'"),
        (["gpuModels", 1, "nvmlMemoryMib"], 0, "gpuModels[1].nvmlMemoryMib: Input should be greater than 0"),
        (["gpuModels", 1, "ec2MemoryMib"], -5, "gpuModels[1].ec2MemoryMib: Input should be greater than 0"),
        (["instanceTypes", 1, "memoryMib"], 0, "instanceTypes[1].memoryMib: Input should be greater than 0"),
        (["instanceTypes", 1, "name"], "g4dn.xlarge", "instanceTypes[1].name: duplicate 'g4dn.xlarge'"),
        (["instanceTypes", 2, "gpuModel"], _DELETE, "instanceTypes[2]: gpuCount is 1 but gpuModel is missing"),
        (["instanceTypes", 2, "source"], "blog", "instanceTypes[2].source: unknown source 'blog'"),
        (["gpuModels", 0, "vendor"], "amd", "gpuModels[0].vendor: Input should be 'nvidia'"),
    ],
)
def test_bad_catalog_data_names_entry_and_field(path, value, message):
    with pytest.raises(CatalogError) as caught:
        parse_catalog(_broken(path, value))
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_shipped_catalog_parses():
    assert parse_catalog(RAW).instance_type("p5.48xlarge").gpu_count == 8
