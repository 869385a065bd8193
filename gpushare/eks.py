"""Amazon EKS support windows per Kubernetes minor, read from gpushare/eks-support.yaml, and what they allow.

A fact module: config validation (`support_problem`) and the policy pack (`standard_support_ends_within`) read the
same windows. Each takes `today` from its caller (the CLI, the Pulumi program and the pack pass the real date,
tests a fixed one), so no check depends on the clock it happens to run at.
"""

from __future__ import annotations

from datetime import date, timedelta
from functools import cache
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gpushare.errors import UserError, first_error, key_path
from gpushare.files import read_yaml
from gpushare.wording import Wording

EKS_SUPPORT_PATH = Path(__file__).with_name("eks-support.yaml")
# The fixed day the reproducible offline plans (the golden files, the offline cluster's plans, the tests) judge
# support windows for, so none of them depends on the day it runs: the shipped stacks' 1.36 is in standard support
# then, and more than WARN_AHEAD from its end. `make plan` and `pulumi up` judge for the real date instead.
FIXED_PLAN_DAY: Final = date(2026, 11, 26)
# How long ahead of the end of standard support the policy pack warns: one quarter to plan an upgrade.
WARN_AHEAD: Final = timedelta(days=90)
# The only StorageClass EKS creates in a new cluster (EKS user guide, "Store Kubernetes volumes with Amazon EBS": gp2,
# provisioned through the EBS CSI driver the stack installs). The stack creates none: a volume claim on any other
# class stays Pending.
EKS_STORAGE_CLASSES: Final = ("gp2",)
# The EKS add-on that provisions (and, on claim deletion, deletes) those EBS volumes: whatever claims a volume must
# depend on it, so `pulumi destroy` deletes the claim while the driver still runs.
EBS_CSI_DRIVER_ADDON: Final = "aws-ebs-csi-driver"


class EksSupportError(UserError):
    """The support data is inconsistent; the message names the entry and field."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class SupportWindow(_Model):
    """Until when EKS supports one minor; on the end date itself the next phase has begun."""

    end_of_standard_support: date = Field(alias="endOfStandardSupport")
    end_of_extended_support: date = Field(alias="endOfExtendedSupport")
    karpenter_minors: tuple[str, ...] = Field(default=(), alias="karpenterMinors")

    @model_validator(mode="after")
    def _extended_after_standard(self) -> SupportWindow:
        if self.end_of_extended_support <= self.end_of_standard_support:
            raise ValueError("endOfExtendedSupport must come after endOfStandardSupport")
        return self


class UpcomingMinor(_Model):
    """A minor Kubernetes released that EKS does not offer yet, and the Karpenter minors that admit it."""

    karpenter_minors: tuple[str, ...] = Field(alias="karpenterMinors", min_length=1)


class EksSupport(_Model):
    versions: dict[str, SupportWindow]
    upcoming: dict[str, UpcomingMinor] = {}

    @model_validator(mode="after")
    def _minors(self) -> EksSupport:
        for minor in (*self.versions, *self.upcoming):
            if not _is_minor(minor):
                raise ValueError(f"{minor!r} is not a Kubernetes minor like 1.36")
        both = set(self.versions) & set(self.upcoming)
        if both:
            raise ValueError(f"{', '.join(sorted(both))} listed as offered and as upcoming")
        return self


def _is_minor(text: str) -> bool:
    major, _, minor = text.partition(".")
    return major == "1" and len(minor) == 2 and minor.isdigit()


@cache
def load_eks_support(path: Path = EKS_SUPPORT_PATH) -> EksSupport:
    """The support windows that ship with the project (cached: config and the policy pack both read them)."""
    try:
        return EksSupport.model_validate(read_yaml(path))
    except ValidationError as error:
        raise EksSupportError(
            f"{path.name}: {first_error(error, lambda loc: key_path('', loc), Wording(EksSupport))}"
        ) from None


def support_problem(
    minor: str, today: date, extended_support: bool, karpenter_version: str, support: EksSupport
) -> str | None:
    """Why EKS will not run `minor` for this stack on `today` without a surprise bill or upgrade (None when it
    will): not offered, outside its Karpenter minors, past extended support, or past standard support without
    opting into extended support."""
    offered = ", ".join(support.versions)
    upcoming = support.upcoming.get(minor)
    if upcoming is not None:
        return (
            f"{minor} is not offered by EKS yet (once it is, it needs Karpenter "
            f"{_karpenter_lines(upcoming.karpenter_minors)}); allowed: {offered}"
        )
    window = support.versions.get(minor)
    if window is None:
        return f"{minor} is not a Kubernetes minor gpushare supports on EKS; allowed: {offered}"
    karpenter_minor = ".".join(karpenter_version.removeprefix("v").split(".")[:2])
    if window.karpenter_minors and karpenter_minor not in window.karpenter_minors:
        return (
            f"{minor} needs Karpenter {_karpenter_lines(window.karpenter_minors)} (Karpenter's compatibility "
            f"matrix), but gpushare:karpenter.chartVersion is {karpenter_version}; allowed: that Karpenter, or "
            f"another of {offered}"
        )
    if today >= window.end_of_extended_support:
        return (
            f"{minor} is past EKS extended support (ended {window.end_of_extended_support}; EKS upgrades such "
            f"clusters itself); allowed: {', '.join(_still_supported(support, today)) or 'none listed'}"
        )
    if today >= window.end_of_standard_support and not extended_support:
        return (
            f"{minor} is past EKS standard support (ended {window.end_of_standard_support}): with supportType STANDARD "
            "EKS upgrades the control plane itself; allowed: a minor in standard support "
            f"({', '.join(_in_standard_support(support, today)) or 'none listed'}), or gpushare:cluster.supportType "
            f"EXTENDED to stay until {window.end_of_extended_support}, billed $0.60 instead of $0.10 per cluster-hour"
        )
    return None


def standard_support_ends_within(minor: str, today: date, support: EksSupport) -> date | None:
    """The end of standard support of `minor` when it is at most WARN_AHEAD away or already past, else None."""
    window = support.versions.get(minor)
    if window is None or today < window.end_of_standard_support - WARN_AHEAD:
        return None
    return window.end_of_standard_support


def _karpenter_lines(minors: tuple[str, ...]) -> str:
    return " or ".join(f"{minor}.x" for minor in minors)


def _in_standard_support(support: EksSupport, today: date) -> list[str]:
    return [minor for minor, window in support.versions.items() if today < window.end_of_standard_support]


def _still_supported(support: EksSupport, today: date) -> list[str]:
    return [minor for minor, window in support.versions.items() if today < window.end_of_extended_support]
