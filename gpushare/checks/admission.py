"""Cross-key checks of a team's behaviour applied at admission: the MutatingAdmissionPolicy API it needs, and the
spot pools and priority spot-only needs."""

from __future__ import annotations

from gpushare import compat
from gpushare.config import PROJECT, StackConfig, TeamConfig
from gpushare.errors import ConfigError, Problems


def check_admission(config: StackConfig, index: int, team: TeamConfig, version_known: bool) -> None:
    """Team behaviour applied by MutatingAdmissionPolicy needs its GA API (judged on a supported version only);
    spot-only needs spot pools."""
    key = f"{PROJECT}:teams[{index}]"
    version = config.cluster.kubernetes_version
    problems = Problems()
    if version_known and not compat.has_mutating_admission_policy(version):
        needs = {
            "schedulerPolicy": team.scheduler_policy is not None,
            "priority": team.priority != "standard",
            "spotOnly": team.spot_only,
        }
        problems.errors.extend(
            ConfigError(
                f"{key}.{field}",
                f"is applied by a MutatingAdmissionPolicy (admissionregistration.k8s.io/v1), GA from Kubernetes "
                f"1.36, but gpushare:cluster.kubernetesVersion is {version}; allowed: kubernetesVersion 1.36 "
                f"or newer, or drop {field}",
            )
            for field, used in needs.items()
            if used
        )
    if team.spot_only:
        lacking = [name for name in team.pools if "spot" not in config.pool(name).capacity_types]
        if team.priority != "batch":
            problems.errors.append(
                ConfigError(f"{key}.spotOnly", f"true needs priority batch, got priority {team.priority!r}")
            )
        elif lacking:
            problems.errors.append(
                ConfigError(
                    f"{key}.spotOnly",
                    f"true but pools {', '.join(lacking)} offer no spot capacity; allowed: only pools whose "
                    "capacityTypes include spot",
                )
            )
    problems.raise_any()
