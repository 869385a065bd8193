"""EC2NodeClasses pass the pinned EC2NodeClass CRD: a refused one leaves every pool unable to launch."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from gpushare import karpenter_api, names

from ..crd import CLASSES_CRD, as_dict, at_most, has, indexed_dicts, integer, matches, one_of, required
from ..rule import Finding, Rule, finding
from ..stack import EC2_NODE_CLASS, Resource, StackView, sorted_by_name

# EC2NodeClass (karpenter.k8s.aws_ec2nodeclasses.yaml, v1): which fields a selector term may combine.
MAX_TERMS = 30
MAX_TAGS = 20
AMI_FAMILIES = ("AL2", "AL2023", "Bottlerocket", "Custom", "Windows2019", "Windows2022", "Windows2025")
ALIAS_FAMILIES = {family.lower(): family for family in AMI_FAMILIES if family != "Custom"}
ALIAS = re.compile(r"^[a-zA-Z0-9]+@.+\Z")
ALIAS_MAX = 30
METADATA_ENUMS = {
    "httpEndpoint": ("enabled", "disabled"),
    "httpProtocolIPv6": ("enabled", "disabled"),
    "httpTokens": ("required", "optional"),
}
VOLUME_TYPES = ("standard", "io1", "io2", "gp2", "sc1", "st1", "gp3")
VOLUME_SIZE = re.compile(
    r"^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G"
    r"|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)\Z"
)


def check_node_classes(view: StackView, _config: None) -> Iterator[Finding]:
    """EC2NodeClasses (karpenter.k8s.aws/v1): a refused one leaves every pool unable to launch."""
    crd = f"the EC2NodeClass CRD ({CLASSES_CRD})"
    for node_class in sorted_by_name(view.of_type(EC2_NODE_CLASS)):
        spec = as_dict(node_class.get("spec"))
        role, profile = spec.get("role"), spec.get("instanceProfile")
        if (role is None) == (profile is None):
            yield finding(
                node_class,
                "spec.role",
                role,
                f"{crd} requires exactly one of role and instanceProfile "
                f"(instanceProfile {'not set' if profile is None else 'set too'})",
                "set exactly one: role (gpushare renders the node role) or instanceProfile",
            )
        for field, value in (("role", role), ("instanceProfile", profile)):
            if value == "":
                yield finding(
                    node_class,
                    f"spec.{field}",
                    value,
                    f"{crd} refuses an empty {field}",
                    f"name the {field} or drop it",
                )
        yield from _selector(node_class, spec, "subnetSelectorTerms", ("tags", "id"), r"subnet-[0-9a-z]+", crd)
        yield from _selector(
            node_class, spec, "securityGroupSelectorTerms", ("tags", "id", "name"), r"sg-[0-9a-z]+", crd
        )
        yield from _ami(node_class, spec, crd)
        options = spec.get("metadataOptions")
        if isinstance(options, dict):
            for field, allowed in METADATA_ENUMS.items():
                yield from one_of(node_class, f"spec.metadataOptions.{field}", options.get(field), allowed, crd)
            limit = options.get("httpPutResponseHopLimit")
            yield from integer(node_class, "spec.metadataOptions.httpPutResponseHopLimit", limit, 1, 64, crd)
        yield from _tags(node_class, spec.get("tags"), crd)
        yield from _block_devices(node_class, spec.get("blockDeviceMappings"), crd)


def _selector(
    node_class: Resource, spec: dict[str, Any], field: str, allowed: tuple[str, ...], id_pattern: str, crd: str
) -> Iterator[Finding]:
    """subnetSelectorTerms / securityGroupSelectorTerms: required, not empty, each term selects by something,
    and id (and for security groups name) alone. The CRD's exclusivity CEL uses `!self.all(...)`: it refuses
    only when every term combines them, so a list with one plain term passes and is not flagged here."""
    where = f"spec.{field}"
    terms = spec.get(field)
    yield from required(node_class, where, terms, crd, "select by the cluster's karpenter.sh/discovery tag")
    if isinstance(terms, list) and not terms:
        yield finding(node_class, where, "[]", f"{crd} refuses it: {field} cannot be empty", "add a term")
    yield from at_most(node_class, where, terms, MAX_TERMS, "terms", crd)
    indexed = indexed_dicts(terms)
    for index, term in indexed:
        at = f"{where}[{index}]"
        if not any(has(term, key) for key in allowed):
            yield finding(
                node_class,
                at,
                term,
                f"{crd} refuses it: expected at least one of {', '.join(allowed)}",
                f"select by {allowed[0]}",
            )
        yield from matches(node_class, f"{at}.id", term.get("id"), re.compile(id_pattern), crd, "write the resource id")
        yield from _term_tags(node_class, f"{at}.tags", term.get("tags"), crd)
    for alone in ("id", "name") if "name" in allowed else ("id",):
        others = [key for key in allowed if key != alone]
        combined = [(index, term) for index, term in indexed if has(term, alone) and any(has(term, k) for k in others)]
        if combined and len(combined) == len(terms):
            for index, term in combined:
                yield finding(
                    node_class,
                    f"{where}[{index}].{alone}",
                    term.get(alone),
                    f"{crd} refuses it: '{alone}' is mutually exclusive with {', '.join(others)} in a selector term",
                    f"select by {alone} alone or drop it",
                )


def _term_tags(node_class: Resource, where: str, tags: Any, crd: str) -> Iterator[Finding]:
    """Selector-term tags: at most 20, no empty key or value."""
    if not isinstance(tags, dict):
        return
    yield from at_most(node_class, where, tags, MAX_TAGS, "tags", crd)
    for key, value in tags.items():
        if key == "" or value == "":
            yield finding(
                node_class, f'{where}["{key}"]', value, f"{crd} refuses empty tag keys or values", "give both"
            )


def _ami(node_class: Resource, spec: dict[str, Any], crd: str) -> Iterator[Finding]:
    """amiSelectorTerms: 1-30 terms; id and alias each stand alone; an alias is the only term; alias format and
    family; amiFamily agrees with an alias and is required without one."""
    where = "spec.amiSelectorTerms"
    terms = spec.get("amiSelectorTerms")
    yield from required(node_class, where, terms, crd, 'select an AMI, e.g. alias "al2023@latest"')
    if isinstance(terms, list) and not terms:
        yield finding(node_class, where, "[]", f"{crd} requires at least 1 term", 'add alias "al2023@latest"')
    yield from at_most(node_class, where, terms, MAX_TERMS, "terms", crd)
    indexed = indexed_dicts(terms)
    selectors = ("tags", "id", "name", "alias", "ssmParameter")
    for index, term in indexed:
        at = f"{where}[{index}]"
        if not any(has(term, key) for key in selectors):
            yield finding(
                node_class,
                at,
                term,
                f"{crd} refuses it: expected at least one of {', '.join(selectors)}",
                "select by alias",
            )
        for alone, others in (("id", ("alias", "tags", "name", "owner")), ("alias", ("id", "tags", "name", "owner"))):
            mixed = [key for key in others if has(term, key)]
            if has(term, alone) and mixed:
                yield finding(
                    node_class,
                    f"{at}.{alone}",
                    term.get(alone),
                    f"{crd} refuses it: '{alone}' cannot be combined with {', '.join(mixed)}",
                    f"select by {alone} alone",
                )
        if has(term, "alias") and isinstance(terms, list) and len(terms) != 1:
            yield finding(
                node_class,
                f"{at}.alias",
                term.get("alias"),
                f"{crd} refuses an alias beside other amiSelectorTerms",
                "keep the alias term only",
            )
        yield from _alias(node_class, f"{at}.alias", term.get("alias"), crd)
        yield from matches(node_class, f"{at}.id", term.get("id"), re.compile(r"ami-[0-9a-z]+"), crd, "write an AMI id")
        yield from _term_tags(node_class, f"{at}.tags", term.get("tags"), crd)
    family = spec.get("amiFamily")
    yield from one_of(node_class, "spec.amiFamily", family, AMI_FAMILIES, crd)
    aliases = [term["alias"] for _, term in indexed if isinstance(term.get("alias"), str)]
    for alias in aliases:
        expected = ALIAS_FAMILIES.get(alias.split("@", 1)[0])  # CEL: alias.find('^[^@]+')
        if family is not None and expected is not None and family not in ("Custom", expected):
            yield finding(
                node_class,
                "spec.amiFamily",
                family,
                f"{crd} requires {expected} or Custom with alias {alias}",
                "drop amiFamily",
            )
    if indexed and not any(has(term, "alias") for _, term in indexed):
        yield from required(node_class, "spec.amiFamily", family, crd, "set amiFamily (e.g. AL2023) or select by alias")


def _alias(node_class: Resource, key: str, alias: Any, crd: str) -> Iterator[Finding]:
    if not isinstance(alias, str):
        return
    family, _, version = alias.partition("@")
    if len(alias) > ALIAS_MAX:
        problem = f"at most {ALIAS_MAX} characters"
    elif not ALIAS.search(alias):
        problem = "'alias' must match the format 'family@version'"
    elif family not in ALIAS_FAMILIES:
        problem = f"family must be one of {', '.join(ALIAS_FAMILIES)}"
    elif family.startswith("windows") and version != "latest":
        problem = "windows families may only specify version 'latest'"
    else:
        return
    yield finding(
        node_class, key, alias, f"{crd} refuses it: {problem}", 'write e.g. "al2023@latest" or "al2023@v20250505"'
    )


def _tags(node_class: Resource, tags: Any, crd: str) -> Iterator[Finding]:
    """spec.tags: no empty key and none of the tags Karpenter sets itself. The cluster-ownership tags
    (kubernetes.io/cluster/...) are karpenter-pieces-consistent's; only the slash-less prefix is left here."""
    for key, value in tags.items() if isinstance(tags, dict) else ():
        prefix = karpenter_api.CLUSTER_OWNERSHIP_TAG_PREFIX
        owned = key.startswith(prefix) and not key.startswith(f"{prefix}/")
        if key == "" or key in karpenter_api.RESTRICTED_NODE_CLASS_TAGS or owned:
            yield finding(
                node_class,
                f'spec.tags["{key}"]',
                value,
                f"{crd} refuses this tag key (empty or restricted)",
                "drop the tag",
            )


def _block_devices(node_class: Resource, mappings: Any, crd: str) -> Iterator[Finding]:
    where = "spec.blockDeviceMappings"
    indexed = indexed_dicts(mappings)
    roots = [index for index, mapping in indexed if mapping.get("rootVolume") is True]
    for index in roots[1:]:
        yield finding(node_class, f"{where}[{index}].rootVolume", True, f"{crd} allows one root volume", "keep one")
    for index, mapping in indexed:
        ebs = mapping.get("ebs")
        if not isinstance(ebs, dict):
            continue
        at = f"{where}[{index}].ebs"
        if not has(ebs, "snapshotID") and not has(ebs, "volumeSize"):
            yield finding(
                node_class,
                f"{at}.volumeSize",
                None,
                f"{crd} requires snapshotID or volumeSize",
                'set volumeSize, e.g. "200Gi"',
            )
        if has(ebs, "volumeInitializationRate") and ebs.get("snapshotID") in (None, ""):
            yield finding(
                node_class,
                f"{at}.snapshotID",
                ebs.get("snapshotID"),
                f"{crd} requires it with volumeInitializationRate",
                "set snapshotID",
            )
        yield from matches(
            node_class, f"{at}.volumeSize", ebs.get("volumeSize"), VOLUME_SIZE, crd, 'write a size such as "200Gi"'
        )
        yield from one_of(node_class, f"{at}.volumeType", ebs.get("volumeType"), VOLUME_TYPES, crd)


RULE = Rule(
    name="ec2nodeclass-crd-valid",
    order=30,
    description=f"Every EC2NodeClass passes the pinned {names.EC2_NODE_CLASS_API} EC2NodeClass CRD's schema and CEL "
    "rules: role or instanceProfile, selector terms, AMI selection, metadata options, tags and volumes.",
    why="The API server refuses such an EC2NodeClass only at `pulumi up`, so no pool can launch nodes.",
    remediation="Write the field as the CRD accepts it (the message names the field and the CRD's rule).",
    enforcement="mandatory",
    severity="high",
    check=check_node_classes,
)
