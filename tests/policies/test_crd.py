"""The CRD-schema rules: what the pinned Karpenter CRDs accept passes, each way they refuse is caught with a
message naming the resource, the key and the value."""

from __future__ import annotations

import pytest

from tests.conftest import PLAN_DATE
from tests.policies.helpers import broken, messages, resources_of
from tests.policies.rules.breaking import delete_at, node_class, overlay, pool, set_at

POOL_RULE = "nodepool-crd-valid"
OVERLAY_RULE = "node-overlay-crd-valid"
CLASS_RULE = "ec2nodeclass-crd-valid"
RULES = (POOL_RULE, OVERLAY_RULE, CLASS_RULE)
G5 = "NodePool g5-shared: "
XL = "NodeOverlay g5-shared-g5-xlarge: "
GPU = "EC2NodeClass gpu: "
DISCOVERY = {"karpenter.sh/discovery": "gpushare-dev"}


def pool_set(path, value):
    return lambda r: set_at(pool(r)["spec"], path, value)


def overlay_set(path, value):
    return lambda r: set_at(overlay(r)["spec"], path, value)


def class_set(path, value):
    return lambda r: set_at(node_class(r)["spec"], path, value)


def requirement(key, operator, values=None, **extra):
    item = {"key": key, "operator": operator, **extra}
    return item if values is None else {**item, "values": values}


def pool_requirement(item):
    return lambda r: pool(r)["spec"]["template"]["spec"]["requirements"].append(item)


def overlay_requirement(item):
    return lambda r: overlay(r)["spec"]["requirements"].append(item)


def budget(**fields):
    return pool_set(["disruption", "budgets"], [fields])


def pool_label(key, value):
    return pool_set(["template", "metadata", "labels", key], value)


def both(*changes):
    def change(r):
        for one in changes:
            one(r)

    return change


@pytest.mark.parametrize("stack", ["dev", "prod"])
@pytest.mark.parametrize("rule", RULES)
def test_shipped_stacks_pass(plans, stack, rule):
    assert messages(resources_of(plans[stack]), rule) == []


# What the CRDs accept, beyond what the shipped stacks set: (policy, change).
VALID = {
    "pool weight 100": (POOL_RULE, pool_set(["weight"], 100)),
    "consolidateAfter Never": (POOL_RULE, pool_set(["disruption", "consolidateAfter"], "Never")),
    "consolidateAfter 0s": (POOL_RULE, pool_set(["disruption", "consolidateAfter"], "0s")),
    "consolidateAfter 1h30m": (POOL_RULE, pool_set(["disruption", "consolidateAfter"], "1h30m")),
    "policy Balanced": (POOL_RULE, pool_set(["disruption", "consolidationPolicy"], "Balanced")),
    "policy WhenEmptyOrUnderutilized": (
        POOL_RULE,
        pool_set(["disruption", "consolidationPolicy"], "WhenEmptyOrUnderutilized"),
    ),
    "expireAfter Never": (POOL_RULE, pool_set(["template", "spec", "expireAfter"], "Never")),
    "expireAfter 720h": (POOL_RULE, pool_set(["template", "spec", "expireAfter"], "720h")),
    "terminationGracePeriod 48h30m": (POOL_RULE, pool_set(["template", "spec", "terminationGracePeriod"], "48h30m")),
    "budget macro schedule": (POOL_RULE, budget(nodes="0", schedule="@daily", duration="1h30m0s")),
    "budget schedule with names, ranges and steps": (
        POOL_RULE,
        budget(nodes="0", schedule="*/30 9-17 1,15 JAN-jun mon-fri", duration="30m"),
    ),
    "budget without nodes (defaulted to 10%)": (POOL_RULE, budget(reasons=["Drifted", "Empty"])),
    "budget 100%": (POOL_RULE, budget(nodes="100%")),
    "capacity-type label": (POOL_RULE, pool_label("karpenter.sh/capacity-type", "on-demand")),
    "label value true": (POOL_RULE, pool_label("nvidia.com/gpu.present", "true")),
    "aws pool-only requirement": (
        POOL_RULE,
        pool_requirement(requirement("karpenter.k8s.aws/instance-tenancy", "Exists")),
    ),
    "NotIn without values on a pool": (POOL_RULE, pool_requirement(requirement("team", "NotIn"))),
    "Gte single integer": (
        POOL_RULE,
        pool_requirement(requirement("karpenter.k8s.aws/instance-gpu-count", "Gte", ["1"])),
    ),
    "minValues met": (
        POOL_RULE,
        pool_set(["template", "spec", "requirements", 0, "minValues"], 2),
    ),
    "limits as integer": (POOL_RULE, pool_set(["limits", "nvidia.com/gpu"], 40)),
    "limits as quantity": (POOL_RULE, pool_set(["limits", "memory"], "512Gi")),
    "price": (OVERLAY_RULE, overlay_set(["price"], "0.5")),
    "priceAdjustment percent up": (OVERLAY_RULE, overlay_set(["priceAdjustment"], "+10%")),
    "priceAdjustment percent down": (OVERLAY_RULE, overlay_set(["priceAdjustment"], "-15.5%")),
    "priceAdjustment -100%": (OVERLAY_RULE, overlay_set(["priceAdjustment"], "-100%")),
    "priceAdjustment fixed": (OVERLAY_RULE, overlay_set(["priceAdjustment"], "-0.5")),
    "overlay weight 10000": (OVERLAY_RULE, overlay_set(["weight"], 10000)),
    "overlay capacity as integer": (OVERLAY_RULE, overlay_set(["capacity", "nvidia.com/gpu"], 10)),
    "overlay capacity-type requirement": (
        OVERLAY_RULE,
        overlay_requirement(requirement("karpenter.sh/capacity-type", "In", ["spot"])),
    ),
    "overlay Exists without values": (OVERLAY_RULE, overlay_requirement(requirement("gpu", "Exists"))),
    "instanceProfile instead of role": (
        CLASS_RULE,
        both(lambda r: delete_at(node_class(r)["spec"], ["role"]), class_set(["instanceProfile"], "gpu-nodes")),
    ),
    "subnet by id": (CLASS_RULE, class_set(["subnetSelectorTerms"], [{"id": "subnet-0abc"}])),
    "id with tags beside a plain term (the CRD's all())": (
        CLASS_RULE,
        class_set(["subnetSelectorTerms"], [{"id": "subnet-0abc", "tags": DISCOVERY}, {"tags": DISCOVERY}]),
    ),
    "security group by name": (CLASS_RULE, class_set(["securityGroupSelectorTerms"], [{"name": "gpu-nodes"}])),
    "ami by id with amiFamily": (
        CLASS_RULE,
        both(class_set(["amiSelectorTerms"], [{"id": "ami-0abc"}]), class_set(["amiFamily"], "AL2023")),
    ),
    "ami alias with matching amiFamily": (CLASS_RULE, class_set(["amiFamily"], "AL2023")),
    "ami alias with Custom": (CLASS_RULE, class_set(["amiFamily"], "Custom")),
    "windows latest": (CLASS_RULE, class_set(["amiSelectorTerms"], [{"alias": "windows2022@latest"}])),
    "metadata optional tokens": (CLASS_RULE, class_set(["metadataOptions", "httpTokens"], "optional")),
    "hop limit 2": (CLASS_RULE, class_set(["metadataOptions", "httpPutResponseHopLimit"], 2)),
    "volume in TiB": (CLASS_RULE, class_set(["blockDeviceMappings", 0, "ebs", "volumeSize"], "2Ti")),
    "snapshot instead of size": (
        CLASS_RULE,
        both(
            lambda r: delete_at(node_class(r)["spec"]["blockDeviceMappings"][0]["ebs"], ["volumeSize"]),
            class_set(["blockDeviceMappings", 0, "ebs", "snapshotID"], "snap-0abc"),
        ),
    ),
    "one root volume": (CLASS_RULE, class_set(["blockDeviceMappings", 0, "rootVolume"], True)),
}


@pytest.mark.parametrize("case", list(VALID))
def test_what_the_crds_accept_passes(plans, case):
    policy, change = VALID[case]
    assert messages(broken(plans["dev"], change), policy) == []


# (policy, change, fragments one message must all contain: resource, key and value, the CRD's reason)
CASES = {
    # NodeOverlay
    "price and priceAdjustment": (
        OVERLAY_RULE,
        both(overlay_set(["price"], "1.0"), overlay_set(["priceAdjustment"], "-10%")),
        [XL + 'spec.priceAdjustment is "-10%"', "both 'price' and 'priceAdjustment'", "karpenter.sh_nodeoverlays"],
    ),
    "price with a currency": (OVERLAY_RULE, overlay_set(["price"], "$1"), [XL + 'spec.price is "$1"', "pattern"]),
    "priceAdjustment without sign": (
        OVERLAY_RULE,
        overlay_set(["priceAdjustment"], "10%"),
        [XL + 'spec.priceAdjustment is "10%"', "pattern"],
    ),
    "priceAdjustment below -100%": (
        OVERLAY_RULE,
        overlay_set(["priceAdjustment"], "-150%"),
        [XL + 'spec.priceAdjustment is "-150%"'],
    ),
    **{
        f"overlay capacity {name}": (
            OVERLAY_RULE,
            overlay_set(["capacity", name], "4"),
            [XL + f'spec.capacity["{name}"] is "4"', "invalid resource restricted"],
        )
        for name in ("cpu", "memory", "ephemeral-storage", "pods")
    },
    "overlay capacity not a quantity": (
        OVERLAY_RULE,
        overlay_set(["capacity", "nvidia.com/gpumem"], "lots"),
        [XL + 'spec.capacity["nvidia.com/gpumem"] is "lots"', "pattern"],
    ),
    "overlay weight 0": (OVERLAY_RULE, overlay_set(["weight"], 0), [XL + "spec.weight is 0", "from 1 to 10000"]),
    "overlay weight 10001": (OVERLAY_RULE, overlay_set(["weight"], 10001), [XL + "spec.weight is 10001"]),
    "overlay requirements missing": (
        OVERLAY_RULE,
        lambda r: delete_at(overlay(r)["spec"], ["requirements"]),
        [XL + "spec.requirements not set", "requires it"],
    ),
    "overlay In without values": (
        OVERLAY_RULE,
        overlay_set(["requirements", 1, "values"], []),
        [XL + "spec.requirements[1].values is []", "operator In without values"],
    ),
    "overlay NotIn without values": (
        OVERLAY_RULE,
        overlay_requirement(requirement("gpu", "NotIn")),
        [XL + "spec.requirements[2].values not set", "operator NotIn without values"],
    ),
    "overlay Gt two values": (
        OVERLAY_RULE,
        overlay_requirement(requirement("karpenter.k8s.aws/instance-gpu-count", "Gt", ["1", "2"])),
        [XL + "spec.requirements[2].values is ['1', '2']", "single non-negative integer"],
    ),
    "overlay Lt not a number": (
        OVERLAY_RULE,
        overlay_requirement(requirement("karpenter.k8s.aws/instance-gpu-count", "Lt", ["four"])),
        [XL + "spec.requirements[2].values is ['four']", "operator Lt"],
    ),
    "overlay unknown operator": (
        OVERLAY_RULE,
        overlay_set(["requirements", 0, "operator"], "Equals"),
        [XL + 'spec.requirements[0].operator is "Equals"', "allows only In, NotIn"],
    ),
    "overlay hostname key": (
        OVERLAY_RULE,
        overlay_set(["requirements", 1, "key"], "kubernetes.io/hostname"),
        [XL + 'spec.requirements[1].key is "kubernetes.io/hostname"', 'label "kubernetes.io/hostname" is restricted'],
    ),
    "overlay karpenter.sh key": (
        OVERLAY_RULE,
        overlay_set(["requirements", 1, "key"], "karpenter.sh/nodeclaim"),
        [XL + 'spec.requirements[1].key is "karpenter.sh/nodeclaim"', 'label domain "karpenter.sh" is restricted'],
    ),
    "overlay pool-only aws key": (
        OVERLAY_RULE,
        overlay_requirement(requirement("karpenter.k8s.aws/instance-tenancy", "Exists")),
        [XL + 'spec.requirements[2].key is "karpenter.k8s.aws/instance-tenancy"', '"karpenter.k8s.aws" is restricted'],
    ),
    "overlay bad key": (
        OVERLAY_RULE,
        overlay_set(["requirements", 1, "key"], "Instance Type"),
        [XL + 'spec.requirements[1].key is "Instance Type"', "not a label key"],
    ),
    "overlay bad value": (
        OVERLAY_RULE,
        overlay_set(["requirements", 1, "values"], ["g5 xlarge"]),
        [XL + 'spec.requirements[1].values[0] is "g5 xlarge"', "not a label value"],
    ),
    # NodePool
    "pool weight 0": (POOL_RULE, pool_set(["weight"], 0), [G5 + "spec.weight is 0", "from 1 to 100"]),
    "pool weight 101": (POOL_RULE, pool_set(["weight"], 101), [G5 + "spec.weight is 101"]),
    "pool weight as text": (POOL_RULE, pool_set(["weight"], "10"), [G5 + 'spec.weight is "10"', "an integer"]),
    "consolidation policy of v1beta1": (
        POOL_RULE,
        pool_set(["disruption", "consolidationPolicy"], "WhenUnderutilized"),
        [G5 + 'spec.disruption.consolidationPolicy is "WhenUnderutilized"', "WhenEmpty, WhenEmptyOrUnderutilized"],
    ),
    "consolidateAfter in days": (
        POOL_RULE,
        pool_set(["disruption", "consolidateAfter"], "1d"),
        [G5 + 'spec.disruption.consolidateAfter is "1d"', "karpenter.sh_nodepools"],
    ),
    "consolidateAfter never (lower case)": (
        POOL_RULE,
        pool_set(["disruption", "consolidateAfter"], "never"),
        [G5 + 'spec.disruption.consolidateAfter is "never"'],
    ),
    "expireAfter in days": (
        POOL_RULE,
        pool_set(["template", "spec", "expireAfter"], "30d"),
        [G5 + 'spec.template.spec.expireAfter is "30d"'],
    ),
    "terminationGracePeriod Never": (
        POOL_RULE,
        pool_set(["template", "spec", "terminationGracePeriod"], "Never"),
        [G5 + 'spec.template.spec.terminationGracePeriod is "Never"', "Never is not allowed"],
    ),
    "budget nodes above 100%": (
        POOL_RULE,
        budget(nodes="110%"),
        [G5 + 'spec.disruption.budgets[0].nodes is "110%"'],
    ),
    "budget nodes not a count": (POOL_RULE, budget(nodes="one"), [G5 + 'spec.disruption.budgets[0].nodes is "one"']),
    "budget duration Never": (
        POOL_RULE,
        budget(nodes="0", schedule="@daily", duration="Never"),
        [G5 + 'spec.disruption.budgets[0].duration is "Never"'],
    ),
    "budget duration in seconds": (
        POOL_RULE,
        budget(nodes="0", schedule="@daily", duration="30s"),
        [G5 + 'spec.disruption.budgets[0].duration is "30s"'],
    ),
    "budget schedule without duration": (
        POOL_RULE,
        budget(nodes="0", schedule="@daily"),
        [G5 + "spec.disruption.budgets[0].duration not set", "'schedule' must be set with 'duration'"],
    ),
    "budget duration without schedule": (
        POOL_RULE,
        budget(nodes="0", duration="1h"),
        [G5 + "spec.disruption.budgets[0].schedule not set", "'schedule' must be set with 'duration'"],
    ),
    "budget schedule not cron": (
        POOL_RULE,
        budget(nodes="0", schedule="daily", duration="1h"),
        [G5 + 'spec.disruption.budgets[0].schedule is "daily"'],
    ),
    "budget schedule the pattern admits but Karpenter cannot parse": (
        POOL_RULE,
        budget(nodes="0", schedule="0 15 * * mon-fry", duration="9h"),
        [G5 + 'spec.disruption.budgets[0].schedule is "0 15 * * mon-fry"', "blocks all disruption"],
    ),
    "budget schedule with 7 for Sunday": (
        POOL_RULE,
        budget(nodes="0", schedule="0 0 * * 7", duration="9h"),
        [G5 + 'spec.disruption.budgets[0].schedule is "0 0 * * 7"', "Sunday is 0 or sun"],
    ),
    "budget schedule that never fires": (
        POOL_RULE,
        budget(nodes="0", schedule="0 0 30 feb *", duration="1h"),
        [G5 + 'spec.disruption.budgets[0].schedule is "0 0 30 feb *"', "never opens"],
    ),
    "budget unknown reason": (
        POOL_RULE,
        budget(nodes="1", reasons=["Expired"]),
        [G5 + 'spec.disruption.budgets[0].reasons[0] is "Expired"', "Underutilized, Empty, Drifted, Unhealthy"],
    ),
    "pool In without values": (
        POOL_RULE,
        pool_set(["template", "spec", "requirements", 0, "values"], []),
        [G5 + "spec.template.spec.requirements[0].values is []", "operator In without values"],
    ),
    "pool Gt two values": (
        POOL_RULE,
        pool_requirement(requirement("karpenter.k8s.aws/instance-gpu-count", "Gt", ["0", "1"])),
        [G5 + "spec.template.spec.requirements[4].values is ['0', '1']", "single non-negative integer"],
    ),
    "pool Gt negative": (
        POOL_RULE,
        pool_requirement(requirement("karpenter.k8s.aws/instance-gpu-count", "Gt", ["-1"])),
        [G5 + "spec.template.spec.requirements[4].values is ['-1']"],
    ),
    "pool nodepool key": (
        POOL_RULE,
        pool_requirement(requirement("karpenter.sh/nodepool", "In", ["g5-shared"])),
        [G5 + 'spec.template.spec.requirements[4].key is "karpenter.sh/nodepool"', 'label "karpenter.sh/nodepool"'],
    ),
    "pool hostname key": (
        POOL_RULE,
        pool_requirement(requirement("kubernetes.io/hostname", "Exists")),
        [G5 + 'spec.template.spec.requirements[4].key is "kubernetes.io/hostname"'],
    ),
    "pool unknown aws key": (
        POOL_RULE,
        pool_requirement(requirement("karpenter.k8s.aws/gpu", "Exists")),
        [G5 + 'spec.template.spec.requirements[4].key is "karpenter.k8s.aws/gpu"', '"karpenter.k8s.aws" is restricted'],
    ),
    "pool minValues above values": (
        POOL_RULE,
        pool_set(["template", "spec", "requirements", 0, "minValues"], 5),
        [G5 + "spec.template.spec.requirements[0].minValues is 5", "(3 listed)"],
    ),
    "pool minValues 0": (
        POOL_RULE,
        pool_set(["template", "spec", "requirements", 0, "minValues"], 0),
        [G5 + "spec.template.spec.requirements[0].minValues is 0", "from 1 to 50"],
    ),
    "pool requirements missing": (
        POOL_RULE,
        lambda r: delete_at(pool(r)["spec"]["template"]["spec"], ["requirements"]),
        [G5 + "spec.template.spec.requirements not set", "requires it"],
    ),
    "label karpenter.sh/nodepool": (
        POOL_RULE,
        pool_label("karpenter.sh/nodepool", "g5-shared"),
        [G5 + 'spec.template.metadata.labels["karpenter.sh/nodepool"] is "g5-shared"', "restricted"],
    ),
    "label in karpenter.sh domain": (
        POOL_RULE,
        pool_label("team.karpenter.sh/owner", "ml"),
        [G5 + 'spec.template.metadata.labels["team.karpenter.sh/owner"] is "ml"', '"karpenter.sh" is restricted'],
    ),
    "label hostname": (
        POOL_RULE,
        pool_label("kubernetes.io/hostname", "node-1"),
        [G5 + 'spec.template.metadata.labels["kubernetes.io/hostname"] is "node-1"'],
    ),
    "label in aws domain": (
        POOL_RULE,
        pool_label("karpenter.k8s.aws/team", "ml"),
        [G5 + 'spec.template.metadata.labels["karpenter.k8s.aws/team"] is "ml"', '"karpenter.k8s.aws" is restricted'],
    ),
    "label value with a space": (
        POOL_RULE,
        pool_label("gpu", "on off"),
        [G5 + 'spec.template.metadata.labels["gpu"] is "on off"', "not a label value"],
    ),
    "limit not a quantity": (
        POOL_RULE,
        pool_set(["limits", "nvidia.com/gpu"], "lots"),
        [G5 + 'spec.limits["nvidia.com/gpu"] is "lots"', "pattern"],
    ),
    "limit fractional number": (
        POOL_RULE,
        pool_set(["limits", "nvidia.com/gpu"], 1.5),
        [G5 + 'spec.limits["nvidia.com/gpu"] is 1.5', "an integer or a quantity string"],
    ),
    "nodeClassRef empty name": (
        POOL_RULE,
        pool_set(["template", "spec", "nodeClassRef", "name"], ""),
        [G5 + 'spec.template.spec.nodeClassRef.name is ""', "non-empty name"],
    ),
    "nodeClassRef group with version": (
        POOL_RULE,
        pool_set(["template", "spec", "nodeClassRef", "group"], "karpenter.k8s.aws/v1"),
        [G5 + 'spec.template.spec.nodeClassRef.group is "karpenter.k8s.aws/v1"'],
    ),
    "taint effect": (
        POOL_RULE,
        pool_set(["template", "spec", "taints", 0, "effect"], "NoRun"),
        [G5 + 'spec.template.spec.taints[0].effect is "NoRun"', "NoSchedule, PreferNoSchedule, NoExecute"],
    ),
    "static pool with weight": (
        POOL_RULE,
        both(pool_set(["replicas"], 2), pool_set(["weight"], 10)),
        [G5 + "spec.weight is 10", "static NodePools"],
    ),
    "static pool with gpu limit": (
        POOL_RULE,
        pool_set(["replicas"], 2),
        [G5 + 'spec.limits is "nvidia.com/gpu"', "only limits.nodes"],
    ),
    "pool template missing": (
        POOL_RULE,
        lambda r: delete_at(pool(r)["spec"], ["template"]),
        [G5 + "spec.template not set"],
    ),
    # EC2NodeClass
    "role and instanceProfile": (
        CLASS_RULE,
        class_set(["instanceProfile"], "gpu-nodes"),
        [GPU + 'spec.role is "gpushare-dev-karpenter-node"', "exactly one of role and instanceProfile", "set too"],
    ),
    "neither role nor instanceProfile": (
        CLASS_RULE,
        lambda r: delete_at(node_class(r)["spec"], ["role"]),
        [GPU + "spec.role not set", "exactly one of role and instanceProfile (instanceProfile not set)"],
    ),
    "empty role": (CLASS_RULE, class_set(["role"], ""), [GPU + 'spec.role is ""', "empty role"]),
    "no subnet terms": (
        CLASS_RULE,
        class_set(["subnetSelectorTerms"], []),
        [GPU + 'spec.subnetSelectorTerms is "[]"', "cannot be empty"],
    ),
    "subnet terms missing": (
        CLASS_RULE,
        lambda r: delete_at(node_class(r)["spec"], ["subnetSelectorTerms"]),
        [GPU + "spec.subnetSelectorTerms not set", "requires it"],
    ),
    "empty subnet term": (
        CLASS_RULE,
        class_set(["subnetSelectorTerms"], [{}]),
        [GPU + "spec.subnetSelectorTerms[0] is {}", "at least one of tags, id"],
    ),
    "subnet id with tags": (
        CLASS_RULE,
        class_set(["subnetSelectorTerms"], [{"id": "subnet-0abc", "tags": DISCOVERY}]),
        [GPU + 'spec.subnetSelectorTerms[0].id is "subnet-0abc"', "'id' is mutually exclusive with tags"],
    ),
    "subnet id malformed": (
        CLASS_RULE,
        class_set(["subnetSelectorTerms"], [{"id": "sn-0abc"}]),
        [GPU + 'spec.subnetSelectorTerms[0].id is "sn-0abc"'],
    ),
    "subnet tag empty value": (
        CLASS_RULE,
        class_set(["subnetSelectorTerms", 0, "tags", "karpenter.sh/discovery"], ""),
        [GPU + 'spec.subnetSelectorTerms[0].tags["karpenter.sh/discovery"] is ""', "empty tag keys or values"],
    ),
    "no security group terms": (
        CLASS_RULE,
        class_set(["securityGroupSelectorTerms"], []),
        [GPU + 'spec.securityGroupSelectorTerms is "[]"', "cannot be empty"],
    ),
    "security group name with tags": (
        CLASS_RULE,
        class_set(["securityGroupSelectorTerms", 0, "name"], "gpu-nodes"),
        [GPU + 'spec.securityGroupSelectorTerms[0].name is "gpu-nodes"', "'name' is mutually exclusive with tags, id"],
    ),
    "security group id with name": (
        CLASS_RULE,
        class_set(["securityGroupSelectorTerms"], [{"id": "sg-0abc", "name": "gpu-nodes"}]),
        [GPU + 'spec.securityGroupSelectorTerms[0].id is "sg-0abc"', "'id' is mutually exclusive"],
    ),
    "no ami terms": (
        CLASS_RULE,
        class_set(["amiSelectorTerms"], []),
        [GPU + 'spec.amiSelectorTerms is "[]"', "at least 1 term"],
    ),
    "empty ami term": (
        CLASS_RULE,
        class_set(["amiSelectorTerms"], [{"owner": "amazon"}]),
        [GPU + "spec.amiSelectorTerms[0] is {'owner': 'amazon'}", "at least one of tags, id, name, alias"],
    ),
    "ami alias with tags": (
        CLASS_RULE,
        class_set(["amiSelectorTerms", 0, "tags"], {"team": "ml"}),
        [GPU + 'spec.amiSelectorTerms[0].alias is "al2023@latest"', "'alias' cannot be combined with tags"],
    ),
    "ami alias beside another term": (
        CLASS_RULE,
        lambda r: node_class(r)["spec"]["amiSelectorTerms"].append({"name": "gpu-ami"}),
        [GPU + 'spec.amiSelectorTerms[0].alias is "al2023@latest"', "alias beside other amiSelectorTerms"],
    ),
    "ami id with name": (
        CLASS_RULE,
        both(class_set(["amiSelectorTerms"], [{"id": "ami-0abc", "name": "gpu"}]), class_set(["amiFamily"], "AL2023")),
        [GPU + 'spec.amiSelectorTerms[0].id is "ami-0abc"', "'id' cannot be combined with name"],
    ),
    "ami alias without version": (
        CLASS_RULE,
        class_set(["amiSelectorTerms", 0, "alias"], "al2023"),
        [GPU + 'spec.amiSelectorTerms[0].alias is "al2023"', "family@version"],
    ),
    "ami alias unknown family": (
        CLASS_RULE,
        class_set(["amiSelectorTerms", 0, "alias"], "ubuntu@latest"),
        [GPU + 'spec.amiSelectorTerms[0].alias is "ubuntu@latest"', "family must be one of"],
    ),
    "ami windows pinned": (
        CLASS_RULE,
        class_set(["amiSelectorTerms", 0, "alias"], "windows2022@v1"),
        [GPU + 'spec.amiSelectorTerms[0].alias is "windows2022@v1"', "only specify version 'latest'"],
    ),
    "ami id without amiFamily": (
        CLASS_RULE,
        class_set(["amiSelectorTerms"], [{"id": "ami-0abc"}]),
        [GPU + "spec.amiFamily not set", "requires it"],
    ),
    "amiFamily against alias": (
        CLASS_RULE,
        class_set(["amiFamily"], "Bottlerocket"),
        [GPU + 'spec.amiFamily is "Bottlerocket"', "requires AL2023 or Custom with alias al2023@latest"],
    ),
    "amiFamily unknown": (
        CLASS_RULE,
        class_set(["amiFamily"], "Ubuntu"),
        [GPU + 'spec.amiFamily is "Ubuntu"', "allows only AL2, AL2023"],
    ),
    **{
        f"metadata {field} {value}": (
            CLASS_RULE,
            class_set(["metadataOptions", field], value),
            [GPU + f'spec.metadataOptions.{field} is "{value}"', "allows only"],
        )
        for field, value in (("httpTokens", "yes"), ("httpEndpoint", "on"), ("httpProtocolIPv6", "true"))
    },
    "hop limit 0": (
        CLASS_RULE,
        class_set(["metadataOptions", "httpPutResponseHopLimit"], 0),
        [GPU + "spec.metadataOptions.httpPutResponseHopLimit is 0", "from 1 to 64"],
    ),
    "hop limit 65": (
        CLASS_RULE,
        class_set(["metadataOptions", "httpPutResponseHopLimit"], 65),
        [GPU + "spec.metadataOptions.httpPutResponseHopLimit is 65"],
    ),
    "restricted tag": (
        CLASS_RULE,
        class_set(["tags", "eks:eks-cluster-name"], "gpushare-dev"),
        [GPU + 'spec.tags["eks:eks-cluster-name"] is "gpushare-dev"', "restricted"],
    ),
    "empty tag key": (CLASS_RULE, class_set(["tags", ""], "x"), [GPU + 'spec.tags[""] is "x"', "empty or restricted"]),
    "volume size in GB": (
        CLASS_RULE,
        class_set(["blockDeviceMappings", 0, "ebs", "volumeSize"], "200GB"),
        [GPU + 'spec.blockDeviceMappings[0].ebs.volumeSize is "200GB"'],
    ),
    "volume type": (
        CLASS_RULE,
        class_set(["blockDeviceMappings", 0, "ebs", "volumeType"], "gp4"),
        [GPU + 'spec.blockDeviceMappings[0].ebs.volumeType is "gp4"', "gp3"],
    ),
    "volume without size or snapshot": (
        CLASS_RULE,
        lambda r: delete_at(node_class(r)["spec"]["blockDeviceMappings"][0]["ebs"], ["volumeSize"]),
        [GPU + "spec.blockDeviceMappings[0].ebs.volumeSize not set", "snapshotID or volumeSize"],
    ),
    "two root volumes": (
        CLASS_RULE,
        both(
            class_set(["blockDeviceMappings", 0, "rootVolume"], True),
            lambda r: node_class(r)["spec"]["blockDeviceMappings"].append(
                {"deviceName": "/dev/xvdb", "rootVolume": True, "ebs": {"volumeSize": "100Gi"}}
            ),
        ),
        [GPU + "spec.blockDeviceMappings[1].rootVolume is true", "one root volume"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_what_the_crds_refuse_is_caught(plans, case):
    policy, change, fragments = CASES[case]
    found = messages(broken(plans["dev"], change), policy)
    assert any(all(fragment in message for fragment in fragments) for message in found), found
    assert all("Fix:" in message for message in found)


def test_the_prod_training_pool_never_expires(plans):
    training = next(r for r in plans["prod"]["resources"] if r["inputs"].get("metadata", {}).get("name") == "training")
    assert training["inputs"]["spec"]["template"]["spec"]["expireAfter"] == "Never"
    assert messages(resources_of(plans["prod"]), POOL_RULE) == []


def test_unknown_preview_values_count_as_set(plans):
    """The role is an IAM output: unknown during a first preview, yet set."""
    from policies.gpushare_policies.registry import evaluate
    from policies.gpushare_policies.stack import UNKNOWN, from_plan

    view = from_plan(resources_of(plans["dev"]), PLAN_DATE)
    gpu = next(r for r in view.resources if r.type.endswith(":EC2NodeClass"))
    gpu.props["spec"]["role"] = UNKNOWN
    gpu.props["spec"]["metadataOptions"]["httpPutResponseHopLimit"] = UNKNOWN
    assert [v for v in evaluate(view) if v.policy == CLASS_RULE] == []
