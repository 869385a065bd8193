"""The parts every section's schema is made of: the base model, value types and the checks they run."""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationInfo

from gpushare import images, karpenter_api
from gpushare.errors import raise_at, repeats

PROJECT = "gpushare"
DNS_LABEL = r"^[a-z]([-a-z0-9]{0,30}[a-z0-9])?$"
SchedulerPolicy = Literal["binpack", "spread"]
Priority = Literal["critical", "standard", "batch"]
# karpenter_api.CONSOLIDATION_POLICIES, spelled out for the type checker (a test holds the two equal).
ConsolidationPolicy = Literal["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"]


def _upstream_registry(value: str) -> str:
    if value not in images.UPSTREAM_REGISTRIES:
        allowed = ", ".join(images.UPSTREAM_REGISTRIES)
        raise ValueError(f"{value!r} is not a registry the stack pulls images from; allowed: {allowed}")
    return value


def _mirror_prefix(value: str) -> str:
    problem = images.mirror_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


UpstreamRegistry = Annotated[str, AfterValidator(_upstream_registry)]
MirrorPrefix = Annotated[str, AfterValidator(_mirror_prefix)]
# The validation context key under which the loader passes the stack's trustedRegistries to the image checks of
# other sections (each judged against those entries that are valid themselves, so a bad entry is reported once).
TRUSTED_REGISTRIES_CONTEXT = "trustedRegistries"


def trusted_registries_context(entries: Any) -> dict[str, tuple[str, ...]]:
    """The valid entries of a raw trustedRegistries value, as a validation context."""
    valid = tuple(
        entry
        for entry in (entries if isinstance(entries, list | tuple) else ())
        if isinstance(entry, str) and images.mirror_problem(entry) is None
    )
    return {TRUSTED_REGISTRIES_CONTEXT: valid}


def trusted_from_context(info: ValidationInfo) -> tuple[str, ...]:
    return tuple((info.context or {}).get(TRUSTED_REGISTRIES_CONTEXT, ()))


def text_matching(pattern: str, example: str) -> Any:
    """A string type whose values must match `pattern` whole, refused as `'<value>' is not <example>`; as a list's
    item type, pydantic names the bad item by its index."""

    def check(value: str) -> str:
        if not re.fullmatch(pattern, value):
            raise ValueError(f"{value!r} is not {example}")
        return value

    return Annotated[str, AfterValidator(check)]


def _cidr(value: str) -> str:
    """A CIDR with its prefix length written out: a bare address is not a CIDR (ipaddress would silently read it as
    a /32), and the stack file should say the range it admits, as it does for a name, which is refused."""
    try:
        network = ipaddress.ip_network(value, strict=True)
    except ValueError:
        raise ValueError(f"{value!r} is not a CIDR like 203.0.113.0/24 (host bits zero)") from None
    if "/" not in value:
        raise ValueError(f"{value!r} is an address, not a CIDR: write {value}/{network.max_prefixlen}")
    return value


def budget_schedule(value: str) -> str:
    problem = karpenter_api.schedule_problem(value)
    if problem is not None:
        raise ValueError(f"{value!r}: {problem}")
    return value


def principal_key(arn: str) -> str:
    """IAM user and role names are unique regardless of case, so ARNs that differ only in case name one
    principal (EKS allows one access entry per principal)."""
    return arn.lower()


ARN_PRINCIPAL = r"^arn:aws[a-z-]*:iam::[0-9]{12}:(role|user)/[\w+=,.@/-]+$"
SubnetId = text_matching(r"subnet-[0-9a-f]{8,17}", "a subnet id like subnet-0123456789abcdef0")
SecurityGroupId = text_matching(r"sg-[0-9a-f]{8,17}", "a security group id like sg-0123456789abcdef0")
InstanceTypeName = text_matching(r"[a-z][a-z0-9-]*\.[a-z0-9-]+", "an EC2 instance type like m7i.large")
PrincipalArn = text_matching(ARN_PRINCIPAL, "an IAM role or user ARN like arn:aws:iam::123456789012:role/ci")
Cidr = Annotated[str, AfterValidator(_cidr)]


def unique_items(value: tuple[Any, ...]) -> tuple[Any, ...]:
    """A list that repeats an item: each repeat reported at its index."""
    raise_at(repeats(value))
    return value


class ConfigModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    def given(self, *fields: str) -> dict[str, Any]:
        """Key (alias) -> value of these fields that the stack file sets, not left to their defaults."""
        return {
            type(self).model_fields[name].alias or name: getattr(self, name)
            for name in fields
            if name in self.model_fields_set
        }


NonEmpty = text_matching(r"\S.*", "a non-empty text")
