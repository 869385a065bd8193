"""What a node registers under a sharing profile (HAMi register.go, mock GetResource), pinned per instance type."""

from __future__ import annotations

import pytest

from gpushare.compat import MOCK_MAX_UNITS_PER_RESOURCE
from gpushare.hami import CapacityError, SharingProfile, node_capacity, smallest_memory_factor


def capacity(catalog, name: str, **profile):
    return node_capacity(catalog, catalog.instance_type(name), SharingProfile(**profile))


@pytest.mark.parametrize(
    ("itype", "expected"),
    [
        ("g5.xlarge", (10, 23028, 100, 100)),
        ("g5.12xlarge", (40, 92112, 400, 400)),
        ("g4dn.12xlarge", (40, 61440, 400, 400)),
        ("g4dn.metal", (80, 122880, 800, 800)),
        ("g6e.xlarge", (10, 46068, 100, 100)),
    ],
)
def test_default_profile_registers_split_10(catalog, itype, expected):
    cap = capacity(catalog, itype)
    assert (cap.vgpus, cap.gpu_memory, cap.gpu_cores, cap.gpu_memory_percentage) == expected


def test_a_vgpu_can_get_at_most_one_whole_gpu(catalog):
    assert capacity(catalog, "g5.12xlarge").vgpu_max_memory_mib == 23028
    assert capacity(catalog, "g4dn.xlarge").vgpu_max_memory_mib == 15360


def test_scaling_truncates_like_hami(catalog):
    cap = capacity(catalog, "g5.xlarge", deviceSplitCount=4, deviceMemoryScaling=0.5, deviceCoreScaling=0.5)
    assert (cap.vgpus, cap.gpu_memory, cap.gpu_cores, cap.vgpu_max_memory_mib) == (4, 11514, 50, 11514)


def test_memory_factor_divides_registered_memory(catalog):
    cap = capacity(catalog, "g5.48xlarge", memoryFactor=2)
    assert cap.gpu_memory == 184224 // 2
    assert cap.gpu_memory_mib == 184224
    assert cap.vgpu_max_memory_mib == 23028


@pytest.mark.parametrize(
    ("itype", "factor"),
    [
        ("g5.48xlarge", 2),
        ("g6.48xlarge", 2),
        ("g6e.12xlarge", 2),
        ("g6e.24xlarge", 2),
        ("g6e.48xlarge", 3),
        ("p4d.24xlarge", 3),
        ("p5.48xlarge", 6),
    ],
)
def test_types_above_the_mock_ceiling_are_refused_naming_the_factor_that_fits(catalog, itype, factor):
    assert smallest_memory_factor(catalog, catalog.instance_type(itype), SharingProfile()) == factor
    with pytest.raises(CapacityError, match=rf"ceiling of 123011 .*; memoryFactor {factor} or more brings it under"):
        capacity(catalog, itype, memoryFactor=factor - 1)
    fits = capacity(catalog, itype, memoryFactor=factor)
    assert fits.gpu_memory <= MOCK_MAX_UNITS_PER_RESOURCE
    assert fits.vgpu_max_memory_mib // factor >= 1


def test_every_catalog_type_fits_at_its_smallest_factor(catalog):
    """Invariant over the shipped catalog: no type is out of reach of a HAMi pool, and g4dn.metal just fits at 1."""
    for itype in catalog.instance_types:
        factor = smallest_memory_factor(catalog, itype, SharingProfile())
        assert capacity(catalog, itype.name, memoryFactor=factor).gpu_memory <= MOCK_MAX_UNITS_PER_RESOURCE
    assert smallest_memory_factor(catalog, catalog.instance_type("g4dn.metal"), SharingProfile()) == 1


def test_memory_scaling_lowers_the_factor_needed(catalog):
    p5 = catalog.instance_type("p5.48xlarge")
    assert smallest_memory_factor(catalog, p5, SharingProfile(deviceMemoryScaling=0.5)) == 3


def test_profile_rejects_oversubscription():
    with pytest.raises(ValueError, match="deviceMemoryScaling"):
        SharingProfile(deviceMemoryScaling=1.5)
