"""Generated README tables: `python -m tools.docs` prints them; a test keeps README.md in step."""

from __future__ import annotations

from gpushare.catalog import load_catalog
from gpushare.errors import UserError
from gpushare.hami import SharingProfile, node_capacity
from policies.gpushare_policies.registry import RULES


def catalog_table() -> str:
    """Every catalog instance type with what one node registers under the default HAMi profile."""
    catalog = load_catalog()
    profile = SharingProfile()
    lines = [
        "| instance type | GPUs | GPU | vGPUs (split 10) | gpumem MiB | vCPU | memory GiB | USD/h on-demand |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for itype in catalog.instance_types:
        try:
            cap = node_capacity(catalog, itype, profile)
            vgpus, gpumem = str(cap.vgpus), str(cap.gpu_memory_mib)
        except UserError:
            vgpus, gpumem = "exclusive only", "above mock ceiling"
        lines.append(
            f"| {itype.name} | {itype.gpu_count} | {itype.gpu_model} | {vgpus} | {gpumem} | {itype.vcpu} "
            f"| {itype.memory_mib // 1024} | {itype.on_demand_usd_per_hour} |"
        )
    return "\n".join(lines)


def policy_table() -> str:
    """The policy pack's rules: id, level, what, why, fix."""
    lines = ["| id | level | what | why | fix |", "|---|---|---|---|---|"]
    for rule in RULES:
        config = ", ".join(f"`{key}`" for key in rule.config_schema())
        fix = f"{rule.remediation} Tunable: {config}." if config else rule.remediation
        lines.append(
            f"| `{rule.name}` | {rule.enforcement} ({rule.severity}) | {rule.description} | {rule.why} | {fix} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(catalog_table())
    print()
    print(policy_table())
