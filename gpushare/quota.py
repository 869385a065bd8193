"""The one table of team quota resources: each resource a team's quota caps and its config key. The config schema
(gpushare/config/teams.py), the domain layer (gpushare/capacity.py: a team's quota in registered units), the
renderers and the policy pack read it from here, so adding a quota resource is adding a row; a module of facts
only, which the schema can import without loading the domain layer that judges it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpushare import names


@dataclass(frozen=True)
class QuotaResource:
    """One resource a team's quota caps: its key under teams[].quota and what that key means (the config schema
    and its docs table are built from this), whether the key is in MiB (nodes register, pods request and quotas
    count GPU memory in units of memoryFactor MiB), whether HAMi's own scheduler charges it too (its `limits.` key,
    HAMi 2.10 pkg/device/quota.go), and whether a team must state it."""

    name: str
    key: str
    meaning: str
    in_mib: bool = False
    hami_charges: bool = False
    required: bool = False


# Left out, a key caps nothing of its own: the team's quota on it is the most its pools can ever register.
LEFT_OUT = "left out: the most the team's pools can ever register (no cap of its own; their maxGpus bound it)"

# The one table of team quota resources: adding one is adding a row (config schema, rendering, checks, pack follow).
QUOTA: tuple[QuotaResource, ...] = (
    QuotaResource(
        names.GPU,
        "gpus",
        f"requests.{names.GPU}: vGPUs on HAMi pools plus whole GPUs on exclusive ones (0 only for a team without "
        "such pools)",
        required=True,
    ),
    QuotaResource(
        names.GPU_MEMORY,
        "gpuMemoryMib",
        f"requests.{names.GPU_MEMORY} and HAMi's limits.{names.GPU_MEMORY}, in MiB (counted in units of memoryFactor "
        f"MiB; HAMi charges GPU memory to every vGPU pod, so 0 on a HAMi pool is refused); {LEFT_OUT}",
        in_mib=True,
        hami_charges=True,
    ),
    QuotaResource(
        names.GPU_CORES,
        "gpuCores",
        f"requests.{names.GPU_CORES} and HAMi's limits.{names.GPU_CORES}, percent of a GPU summed (a whole vGPU "
        f"counts 100: HAMi's webhook adds it); {LEFT_OUT}",
        hami_charges=True,
    ),
    QuotaResource(
        names.GPU_SHARED,
        "sharedGpus",
        f"requests.{names.GPU_SHARED}: time-sliced GPU replicas on timeslice pools; {LEFT_OUT}",
    ),
)
# Quota resources a team's pools supply.
QUOTA_RESOURCES = tuple(resource.name for resource in QUOTA)
