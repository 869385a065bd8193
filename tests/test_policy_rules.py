"""Per rule: the dev and prod plans pass, and each variant that breaks one field is caught with a message
that names the resource, the key, the value and the fix."""

from __future__ import annotations

import pytest

from gpushare.names import GPU_SHARED
from policies.gpushare_policies.registry import RULES
from tests.policy_helpers import broken, drop, entry, find, messages, resources_of, violations

G5 = "g5-shared"
MOCK_REPO = "docker.io/projecthami/mock-device-plugin"
G5_XL = "g5-shared-g5-xlarge"


def pool(r, name=G5):
    return find(r, "NodePool", name)


def overlay(r, name=G5_XL):
    return find(r, "NodeOverlay", name)


def release(r, name):
    return find(r, "Release", name)


def mock(r):
    return find(r, "DaemonSet", "hami-mock-device-plugin")


def node_class(r):
    return find(r, "EC2NodeClass", "gpu")


def cluster(r):
    return next(x["inputs"] for x in r if x["type"] == "eks:index:Cluster")


def _set(target, path, value):
    *head, last = path
    for step in head:
        target = target[step]
    target[last] = value


def _del(target, path):
    *head, last = path
    for step in head:
        target = target[step]
    del target[last]


@pytest.mark.parametrize("stack", ["dev", "prod"])
@pytest.mark.parametrize("rule", [rule.name for rule in RULES])
def test_shipped_stacks_pass(plans, stack, rule):
    found = violations(resources_of(plans[stack]), rule)
    if (stack, rule) == ("dev", "eks-public-endpoint-restricted"):
        assert [v.message.split(": ")[0] for v in found] == ["eks:index:Cluster gpushare-dev"]
    else:
        assert found == []


# (policy, change, every fragment the single expected message must contain)
CASES = {
    "label gpu missing": (
        "hami-pool-labels-match-device-plugins",
        lambda r: _del(pool(r), ["spec", "template", "metadata", "labels", "gpu"]),
        ['NodePool g5-shared: spec.template.metadata.labels["gpu"] not set', "nvidiaNodeSelector", 'add gpu: "on"'],
    ),
    "label gpu off": (
        "hami-pool-labels-match-device-plugins",
        lambda r: _set(pool(r), ["spec", "template", "metadata", "labels", "gpu"], "off"),
        ['labels["gpu"] is "off"', "DaemonSet hami-mock-device-plugin requires nodeSelector gpu"],
    ),
    "hami toleration missing": (
        "hami-pool-labels-match-device-plugins",
        lambda r: _set(release(r, "hami"), ["values", "devicePlugin", "tolerations"], []),
        ['taint [0] is "nvidia.com/gpu=true:NoSchedule"', "HAMi device plugin", "values.devicePlugin.tolerations"],
    ),
    "mock toleration missing": (
        "hami-pool-labels-match-device-plugins",
        lambda r: _set(mock(r), ["spec", "template", "spec", "tolerations"], []),
        ["DaemonSet hami-mock-device-plugin does not tolerate it", "add a toleration for nvidia.com/gpu"],
    ),
    "custom selector not on pool": (
        "hami-pool-labels-match-device-plugins",
        lambda r: _set(release(r, "hami"), ["values", "devicePlugin", "nvidiaNodeSelector"], {"accel": "hami"}),
        ['labels["accel"] not set', 'add accel: "hami"'],
    ),
    "mock affinity unmet": (
        "hami-pool-labels-match-device-plugins",
        lambda r: _set(
            mock(r),
            ["spec", "template", "spec", "affinity"],
            {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Exists"}]}]
                    }
                }
            },
        ),
        ["requires its required node affinity"],
    ),
    "overlay missing": (
        "hami-overlay-coverage",
        lambda r: drop(r, "NodeOverlay", G5_XL),
        ["NodePool g5-shared: instance type g5.xlarge has no NodeOverlay setting nvidia.com/gpu, nvidia.com/gpumem"],
    ),
    "overlay for another pool": (
        "hami-overlay-coverage",
        lambda r: _set(overlay(r), ["spec", "requirements", 0, "values"], ["g4dn-shared"]),
        ["instance type g5.xlarge has no NodeOverlay", "karpenter.sh/nodepool In [g5-shared]"],
    ),
    "overlay on an unknown label": (
        "hami-overlay-coverage",
        lambda r: overlay(r)["spec"]["requirements"].append(
            {"key": "example.com/rack", "operator": "In", "values": ["r1"]}
        ),
        [
            "instance type g5.xlarge has no NodeOverlay",
            "NodeOverlay g5-shared-g5-xlarge is meant for it but its requirement example.com/rack In [r1]",
            "drop that requirement from NodeOverlay g5-shared-g5-xlarge",
        ],
    ),
    "overlay on a Karpenter label the type does not have": (
        "hami-overlay-coverage",
        lambda r: overlay(r)["spec"]["requirements"].append(
            {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["t4"]}
        ),
        ["instance type g5.xlarge has no NodeOverlay"],
    ),
    "one resource missing": (
        "hami-overlay-coverage",
        lambda r: _del(overlay(r), ["spec", "capacity", "nvidia.com/gpumem-percentage"]),
        ["g5.xlarge has no NodeOverlay setting nvidia.com/gpumem-percentage:"],
    ),
    "pool types open": (
        "hami-overlay-coverage",
        lambda r: _set(pool(r), ["spec", "template", "spec", "requirements", 0, "operator"], "Exists"),
        ["NodePool g5-shared: spec.template.spec.requirements has no `node.kubernetes.io/instance-type In"],
    ),
    "gpumem 24000": (
        "hami-overlay-capacity-matches",
        lambda r: _set(overlay(r), ["spec", "capacity", "nvidia.com/gpumem"], "24000"),
        ['NodeOverlay g5-shared-g5-xlarge: spec.capacity["nvidia.com/gpumem"] is "24000"', "registers 23028", "more"],
    ),
    "gpumem below": (
        "hami-overlay-capacity-matches",
        lambda r: _set(overlay(r), ["spec", "capacity", "nvidia.com/gpumem"], "20000"),
        ["promising less", 'set it to "23028"', "allowBelowRegistered"],
    ),
    "vgpus doubled": (
        "hami-overlay-capacity-matches",
        lambda r: _set(overlay(r), ["spec", "capacity", "nvidia.com/gpu"], "20"),
        ['spec.capacity["nvidia.com/gpu"] is "20"', "registers 10"],
    ),
    "gpucores not a quantity": (
        "hami-overlay-capacity-matches",
        lambda r: _set(overlay(r), ["spec", "capacity", "nvidia.com/gpucores"], "lots"),
        ['spec.capacity["nvidia.com/gpucores"] is "lots": not a Kubernetes quantity'],
    ),
    "above mock ceiling": (
        "hami-overlay-capacity-matches",
        lambda r: _set(
            find(r, "NodeOverlay", "g5-shared-g5-4xlarge"), ["spec", "capacity", "nvidia.com/gpumem"], "200000"
        ),
        ["cannot advertise more than 123011", "exclusive pool"],
    ),
    "type not in catalog": (
        "hami-overlay-capacity-matches",
        lambda r: pool(r)["spec"]["template"]["spec"]["requirements"][0]["values"].append("x9.large"),
        ["NodePool g5-shared: x9.large is not in the gpushare catalog"],
    ),
    "equal-weight duplicate": (
        "node-overlay-no-conflicts",
        lambda r: r.append(
            {**entry(r, "NodeOverlay", G5_XL), "urn": "urn:x", "inputs": _renamed(overlay(r), "second-xlarge")}
        ),
        ['NodeOverlay g5-shared-g5-xlarge: spec.capacity["nvidia.com/gpu"] at spec.weight 10', "second-xlarge"],
    ),
    "cpu limit 10": (
        "nodepool-limits-admit-nodes",
        lambda r: _set(pool(r), ["spec", "limits", "cpu"], "10"),
        ['NodePool g5-shared: spec.limits["cpu"] is "10"', "one g5.4xlarge node counts 16 vCPU"],
    ),
    "gpu limit in physical GPUs": (
        "nodepool-limits-admit-nodes",
        lambda r: _set(pool(r, "g4dn-shared"), ["spec", "limits", "nvidia.com/gpu"], "4"),
        ['spec.limits["nvidia.com/gpu"] is "4"', "g4dn.xlarge node counts 10 vGPUs"],
    ),
    "memory limit": (
        "nodepool-limits-admit-nodes",
        lambda r: _set(pool(r, "g4dn-shared"), ["spec", "limits", "memory"], "16Gi"),
        ['spec.limits["memory"] is "16Gi"', "g4dn.2xlarge"],
    ),
    "gate off": (
        "karpenter-node-overlay-enabled",
        lambda r: _set(release(r, "karpenter"), ["values", "settings", "featureGates", "nodeOverlay"], False),
        ["Release karpenter: values.settings.featureGates.nodeOverlay is false", "silently ignores all 7"],
    ),
    "gate absent": (
        "karpenter-node-overlay-enabled",
        lambda r: _del(release(r, "karpenter"), ["values", "settings", "featureGates"]),
        ["featureGates.nodeOverlay not set"],
    ),
    "karpenter 1.6": (
        "karpenter-node-overlay-enabled",
        lambda r: _set(release(r, "karpenter"), ["version"], "1.6.2"),
        ['Release karpenter: version is "1.6.2"', "from Karpenter 1.7.0"],
    ),
    "no karpenter release": (
        "karpenter-node-overlay-enabled",
        lambda r: drop(r, "Release", "karpenter"),
        ["7 NodeOverlays but no `karpenter` Helm release"],
    ),
    "karpenter 1.12": (
        "karpenter-version-recommended",
        lambda r: _set(release(r, "karpenter"), ["version"], "1.12.0"),
        ['Release karpenter: version is "1.12.0": below 1.13.0'],
    ),
    "no mock": (
        "mock-device-plugin-matches-hami",
        lambda r: drop(r, "DaemonSet", "hami-mock-device-plugin"),
        ["5 overlays advertise", "ResourceNotRegistered"],
    ),
    "wrong configmap": (
        "mock-device-plugin-matches-hami",
        lambda r: _set(mock(r), ["spec", "template", "spec", "volumes", 2, "configMap", "name"], "hami-device"),
        ['configMap.name is "hami-device"', "ConfigMap hami-scheduler-device"],
    ),
    "renamed hami release": (
        "mock-device-plugin-matches-hami",
        lambda r: _set(release(r, "hami"), ["name"], "vgpu"),
        ["ConfigMap vgpu-hami-scheduler-device"],
    ),
    "mock in another namespace": (
        "mock-device-plugin-matches-hami",
        lambda r: _set(mock(r), ["metadata", "namespace"], "gpu-system"),
        ['metadata.namespace is "gpu-system"', "deploy the DaemonSet in kube-system"],
    ),
    "mock too old for hami": (
        "mock-device-plugin-matches-hami",
        lambda r: _set(release(r, "hami"), ["version"], "2.9.0"),
        ["mock 1.0.1 cannot parse the device config HAMi chart 2.9.0 writes", "pin HAMi chart 2.7.0 to 2.8.3"],
    ),
    "unknown mock tag": (
        "mock-device-plugin-matches-hami",
        lambda r: _set(mock(r), ["spec", "template", "spec", "containers", 0, "image"], f"{MOCK_REPO}:9"),
        ["gpushare knows no HAMi compatibility for this tag"],
    ),
    "selector key of 2.7": (
        "hami-values-match-chart-version",
        lambda r: _set(release(r, "hami"), ["values", "devicePlugin", "nvidianodeSelector"], {"gpu": "on"}),
        ["Release hami: values.devicePlugin.nvidianodeSelector is", "rename it to devicePlugin.nvidiaNodeSelector"],
    ),
    "imageTag of 2.6": (
        "hami-values-match-chart-version",
        lambda r: _set(release(r, "hami"), ["values", "scheduler", "kubeScheduler", "imageTag"], "v1.34.0"),
        ["values.scheduler.kubeScheduler.imageTag", "renamed in 2.7.0"],
    ),
    "scheduler minor mismatch": (
        "hami-values-match-chart-version",
        lambda r: _set(release(r, "hami"), ["values", "scheduler", "kubeScheduler", "image", "tag"], "v1.33.2"),
        ['image.tag is "v1.33.2"', "Kubernetes 1.36", "set it to v1.36.0"],
    ),
    "unknown hami chart": (
        "hami-values-match-chart-version",
        lambda r: _set(release(r, "hami"), ["version"], "2.6.1"),
        ['Release hami: version is "2.6.1"', "pin one of 2.7.0"],
    ),
    "bottlerocket": (
        "hami-pools-use-al2023",
        lambda r: _set(node_class(r), ["spec", "amiSelectorTerms"], [{"alias": "bottlerocket@latest"}]),
        ['EC2NodeClass gpu: spec.amiSelectorTerms[0].alias is "bottlerocket@latest"', "its own NVIDIA device plugin"],
    ),
    "ami by id, bottlerocket family": (
        "hami-pools-use-al2023",
        lambda r: node_class(r)["spec"].update(amiSelectorTerms=[{"id": "ami-1"}], amiFamily="Bottlerocket"),
        ['spec.amiFamily is "Bottlerocket"'],
    ),
    "node class missing": (
        "hami-pools-use-al2023",
        lambda r: _set(pool(r), ["spec", "template", "spec", "nodeClassRef", "name"], "other"),
        ['NodePool g5-shared: spec.template.spec.nodeClassRef.name is "other": no EC2NodeClass'],
    ),
    "pool without dependencies": (
        "karpenter-objects-depend-on-releases",
        lambda r: _set(entry(r, "NodePool", G5), ["dependencies"], []),
        ["NodePool g5-shared: does not depend on Release karpenter-crd", "depends_on"],
    ),
    "imdsv1": (
        "node-security-baseline",
        lambda r: _set(node_class(r), ["spec", "metadataOptions", "httpTokens"], "optional"),
        ['EC2NodeClass gpu: spec.metadataOptions.httpTokens is "optional"', "required"],
    ),
    "hop limit 2": (
        "node-security-baseline",
        lambda r: _set(node_class(r), ["spec", "metadataOptions", "httpPutResponseHopLimit"], 2),
        ["httpPutResponseHopLimit is 2", "set it to 1"],
    ),
    "unencrypted volume": (
        "node-security-baseline",
        lambda r: _set(node_class(r), ["spec", "blockDeviceMappings", 0, "ebs", "encrypted"], False),
        ["spec.blockDeviceMappings[0].ebs.encrypted is false"],
    ),
    "public ip unset": (
        "node-security-baseline",
        lambda r: _del(node_class(r), ["spec", "associatePublicIPAddress"]),
        ["spec.associatePublicIPAddress not set"],
    ),
    "secrets unencrypted": (
        "node-security-baseline",
        lambda r: _del(cluster(r), ["encryptionConfigKeyArn"]),
        ["eks:index:Cluster gpushare-dev: encryptionConfigKeyArn not set"],
    ),
    "wide cidr": (
        "eks-public-endpoint-restricted",
        lambda r: _set(cluster(r), ["publicAccessCidrs"], ["10.0.0.0/8"]),
        ['publicAccessCidrs is "10.0.0.0/8"', "a /8"],
    ),
    "no cidrs means the world": (
        "eks-public-endpoint-restricted",
        lambda r: _del(cluster(r), ["publicAccessCidrs"]),
        ["publicAccessCidrs not set", "a /0"],
    ),
    "not a cidr": (
        "eks-public-endpoint-restricted",
        lambda r: _set(cluster(r), ["publicAccessCidrs"], ["banana"]),
        ['publicAccessCidrs is "banana": not a CIDR'],
    ),
    "team without quota": (
        "team-namespace-gpu-quota",
        lambda r: drop(r, "ResourceQuota", "inference-gpu"),
        ["Namespace inference: team namespace has no ResourceQuota on requests.nvidia.com/gpu"],
    ),
    "quota without gpumem": (
        "team-namespace-gpu-quota",
        lambda r: _del(find(r, "ResourceQuota", "inference-gpu"), ["spec", "hard", "requests.nvidia.com/gpumem"]),
        ["no ResourceQuota on requests.nvidia.com/gpumem:"],
    ),
    "quota above pools": (
        "team-quota-within-pool-limits",
        lambda r: _set(find(r, "ResourceQuota", "inference-gpu"), ["spec", "hard", "requests.nvidia.com/gpu"], "41"),
        ['ResourceQuota inference-gpu: spec.hard["requests.nvidia.com/gpu"] is "41"', "at most 40"],
    ),
}


INFERENCE_NODE_POLICY = "gpushare-inference-node-scheduler-policy"
# Monitoring is on in prod only: these cases break the prod plan.
PROD_CASES = {
    "exclusive-only team without the webhook label": (
        "hami-webhook-scope",
        lambda r: _set(
            find(r, "Namespace", "ml-research"), ["metadata", "annotations", "gpushare.io/pools"], "training"
        ),
        [
            'Namespace ml-research: metadata.labels["hami.io/webhook"] not set',
            "label the namespace hami.io/webhook=ignore",
        ],
    ),
    "webui for HAMi 2.9 metrics": (
        "monitoring-webui-reads-hami-metrics",
        lambda r: _set(release(r, "hami-webui"), ["version"], "1.2.0"),
        ['Release hami-webui: version is "1.2.0"', "HAMi chart 2.8.3", "1.1.0 with HAMi 2.4.0"],
    ),
    "webui image floats": (
        "monitoring-images-pinned",
        lambda r: _set(release(r, "hami-webui"), ["values", "image", "frontend", "tag"], "main"),
        ["Release hami-webui: values.image.frontend", "floats", "set values.image.frontend.tag"],
    ),
    "exporter without GPU toleration": (
        "gpu-exporter-on-gpu-nodes",
        lambda r: _set(release(r, "dcgm-exporter"), ["values", "tolerations"], []),
        ["Release dcgm-exporter", "does not tolerate the GPU taint nvidia.com/gpu:NoSchedule"],
    ),
    "exporter on every node": (
        "gpu-exporter-on-gpu-nodes",
        lambda r: _del(release(r, "dcgm-exporter"), ["values", "affinity"]),
        ["does not require the GPU pool label gpushare.io/sharing"],
    ),
    "service monitor in the wrong namespace": (
        "service-monitors-find-their-targets",
        lambda r: _set(
            find(r, "ServiceMonitor", "karpenter"), ["spec", "namespaceSelector", "matchNames"], ["karpenter"]
        ),
        [
            "ServiceMonitor karpenter: spec.namespaceSelector.matchNames",
            "its target runs in kube-system",
            "select [kube-system]",
        ],
    ),
}


def _rename_key(mapping, old, new):
    mapping[new] = mapping.pop(old)


CASES |= {
    "overlay with a resource HAMi does not register": (
        "hami-resource-names-consistent",
        lambda r: _rename_key(overlay(r)["spec"]["capacity"], "nvidia.com/gpumem", "nvidia.com/gpu-memory"),
        ['NodeOverlay g5-shared-g5-xlarge: spec.capacity["nvidia.com/gpu-memory"]', "resourceMem=nvidia.com/gpumem"],
    ),
    "HAMi renamed, quota not": (
        "hami-resource-names-consistent",
        lambda r: _set(release(r, "hami"), ["values", "resourceCores"], "nvidia.com/vgpu-cores"),
        ['ResourceQuota inference-gpu: spec.hard["requests.nvidia.com/gpucores"]', "caps nothing"],
    ),
    "LimitRange default on an unknown resource": (
        "hami-resource-names-consistent",
        lambda r: _set(
            find(r, "LimitRange", "inference-defaults")["spec"]["limits"][0],
            ["default"],
            {"nvidia.com/gpumemory": "1024"},
        ),
        ['LimitRange inference-defaults: spec.limits[0].default["nvidia.com/gpumemory"]', "applies to nothing"],
    ),
    "shared-pool team skips HAMi's webhook": (
        "hami-webhook-scope",
        lambda r: _set(find(r, "Namespace", "inference"), ["metadata", "labels", "hami.io/webhook"], "ignore"),
        ['Namespace inference: metadata.labels["hami.io/webhook"] is "ignore"', "bypass hami-scheduler"],
    ),
    "quota key without requests.": (
        "quota-keys-enforced",
        lambda r: _rename_key(
            find(r, "ResourceQuota", "inference-gpu")["spec"]["hard"], "requests.nvidia.com/gpumem", "nvidia.com/gpumem"
        ),
        [
            'ResourceQuota inference-gpu: spec.hard["nvidia.com/gpumem"] is "30720"',
            "write it as requests.nvidia.com/gpumem",
        ],
    ),
    "quota key as limits.": (
        "quota-keys-enforced",
        lambda r: _rename_key(
            find(r, "ResourceQuota", "inference-gpu")["spec"]["hard"],
            "requests.nvidia.com/gpu",
            "limits.nvidia.com/gpu",
        ),
        ['spec.hard["limits.nvidia.com/gpu"] is "20"', "caps nothing"],
    ),
    "karpenter crds at another version": (
        "karpenter-pieces-consistent",
        lambda r: _set(release(r, "karpenter-crd"), ["version"], "1.14.1"),
        ['Release karpenter-crd: version is "1.14.1"', "differ from the controller's 1.15.1"],
    ),
    "karpenter version with a v": (
        "karpenter-pieces-consistent",
        lambda r: _set(release(r, "karpenter"), ["version"], "v1.15.1"),
        ['Release karpenter: version is "v1.15.1"', "without a leading v"],
    ),
    "node class that does not exist": (
        "karpenter-pieces-consistent",
        lambda r: _set(pool(r), ["spec", "template", "spec", "nodeClassRef", "name"], "default"),
        ['NodePool g5-shared: spec.template.spec.nodeClassRef.name is "default"', "name one of: gpu"],
    ),
    "another cluster's discovery tag": (
        "karpenter-pieces-consistent",
        lambda r: _set(node_class(r), ["spec", "subnetSelectorTerms", 0, "tags", "karpenter.sh/discovery"], "other"),
        ['EC2NodeClass gpu: spec.subnetSelectorTerms[0].tags["karpenter.sh/discovery"] is "other"', "use"],
    ),
    "cluster ownership tag on the node class": (
        "karpenter-pieces-consistent",
        lambda r: _set(node_class(r), ["spec", "tags", "kubernetes.io/cluster/gpushare-dev"], "owned"),
        ['spec.tags["kubernetes.io/cluster/gpushare-dev"] is "owned"', "drop the tag"],
    ),
    "NodePool the CRD refuses": (
        "nodepool-crd-valid",
        lambda r: _set(pool(r), ["spec", "disruption", "consolidateAfter"], "1d"),
        ['NodePool g5-shared: spec.disruption.consolidateAfter is "1d"', "karpenter.sh_nodepools.yaml"],
    ),
    "NodeOverlay the CRD refuses": (
        "node-overlay-crd-valid",
        lambda r: _set(overlay(r), ["spec", "capacity", "pods"], "110"),
        ['NodeOverlay g5-shared-g5-xlarge: spec.capacity["pods"] is "110"', "invalid resource restricted"],
    ),
    "EC2NodeClass the CRD refuses": (
        "ec2nodeclass-crd-valid",
        lambda r: _set(node_class(r), ["spec", "instanceProfile"], "gpu-nodes"),
        ["EC2NodeClass gpu: spec.role", "exactly one of role and instanceProfile"],
    ),
    "admission policy for every namespace": (
        "team-admission-scoped",
        lambda r: _del(
            find(r, "MutatingAdmissionPolicy", INFERENCE_NODE_POLICY), ["spec", "matchConstraints", "namespaceSelector"]
        ),
        [f"MutatingAdmissionPolicy {INFERENCE_NODE_POLICY}: matchConstraints must select only namespace inference"],
    ),
    "admission binding for another namespace": (
        "team-admission-scoped",
        lambda r: _set(
            find(r, "MutatingAdmissionPolicyBinding", INFERENCE_NODE_POLICY),
            ["spec", "matchResources", "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name"],
            "ml-research",
        ),
        [
            f"MutatingAdmissionPolicyBinding {INFERENCE_NODE_POLICY}: matchResources must select only namespace "
            "inference"
        ],
    ),
    "admission policy without binding": (
        "team-admission-scoped",
        lambda r: _set(
            find(r, "MutatingAdmissionPolicyBinding", INFERENCE_NODE_POLICY), ["spec", "policyName"], "other"
        ),
        [f"MutatingAdmissionPolicy {INFERENCE_NODE_POLICY}: no MutatingAdmissionPolicyBinding names it"],
    ),
    "recorded scheduler policy not applied": (
        "team-scheduler-policy-applied",
        lambda r: _set(
            find(r, "Namespace", "inference"),
            ["metadata", "annotations", "gpushare.io/node-scheduler-policy"],
            "binpack",
        ),
        ["Namespace inference: scheduler policy binpack is not applied to its pods", "Fix:"],
    ),
}


CASES |= {
    "HAMi device plugin off": (
        "hami-pool-labels-match-device-plugins",
        lambda r: _set(release(r, "hami"), ["values", "devicePlugin", "enabled"], False),
        ["Release hami: values turn off HAMi's device plugin", "pools g4dn-shared, g5-shared never register"],
    ),
    "HAMi device plugin on every node": (
        "hami-pool-labels-match-device-plugins",
        lambda r: _set(release(r, "hami"), ["values", "devicePlugin", "nvidiaNodeSelector"], None),
        ["Release hami: values.devicePlugin.nvidiaNodeSelector not set", "runs on every node"],
    ),
}

PER_GPU = "gpushare-inference-per-gpu-limit"
WIDE = "ml-research"

CASES |= {
    "per-GPU limit policy unbound": (
        "team-per-gpu-limit-enforced",
        lambda r: drop(r, "ValidatingAdmissionPolicyBinding", PER_GPU),
        ["Namespace inference: no ValidatingAdmissionPolicy bound with Deny", "more than 15360 nvidia.com/gpumem"],
    ),
    "per-GPU limit only warns": (
        "team-per-gpu-limit-enforced",
        lambda r: _set(find(r, "ValidatingAdmissionPolicyBinding", PER_GPU), ["spec", "validationActions"], ["Warn"]),
        ["Namespace inference: no ValidatingAdmissionPolicy bound with Deny", "nvidia.com/gpucores"],
    ),
    "more than one time-sliced replica allowed": (
        "team-per-gpu-limit-enforced",
        lambda r: find(r, "ValidatingAdmissionPolicy", "gpushare-ml-research-per-gpu-limit")["spec"][
            "validations"
        ].pop(),
        ["Namespace ml-research: no ValidatingAdmissionPolicy", f"more than 1 {GPU_SHARED} (one time-sliced replica"],
    ),
    "per-GPU limit above the largest GPU": (
        "team-per-gpu-limit-enforced",
        lambda r: [
            v.update(expression=v["expression"].replace("quantity('15360')", "quantity('23028')"))
            for v in find(r, "ValidatingAdmissionPolicy", PER_GPU)["spec"]["validations"]
        ],
        [f"ValidatingAdmissionPolicy {PER_GPU}: its nvidia.com/gpumem bound is not 15360", "g4dn-shared"],
    ),
}

PROD_CASES |= {
    "exclusive pool given a time-slicing config": (
        "timeslice-overlays-match",
        lambda r: _set(
            release(r, "nvidia-device-plugin"),
            ["values", "config"],
            {
                "map": {
                    "ts": "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n"
                    "    - name: nvidia.com/gpu\n      replicas: 2\n"
                },
                "default": "ts",
            },
        ),
        ["NodePool training", "config ts, which time-slices nvidia.com/gpu into nvidia.com/gpu.shared"],
    ),
    "HAMi pool mixing GPU counts": (
        "hami-pool-one-gpu-count",
        lambda r: pool(r)["spec"]["template"]["spec"]["requirements"][0]["values"].append("g5.12xlarge"),
        ["NodePool g5-shared", "g5.xlarge (1 GPU)", "g5.12xlarge (4 GPUs)", "split the pool by GPU count"],
    ),
}

TS = "g6-timeslice"
TS_XL = "g6-timeslice-g6-xlarge"
TS_LABELS = ["spec", "template", "metadata", "labels"]

CASES |= {
    "NVIDIA plugin admitted on a HAMi pool": (
        "nvidia-device-plugin-placement",
        lambda r: pool(r)["spec"]["template"]["metadata"]["labels"].update(
            {"gpushare.io/device-plugin": "nvidia", "nvidia.com/gpu.present": "true"}
        ),
        ["NodePool g5-shared: spec.template.metadata.labels is", "two device plugins register nvidia.com/gpu"],
    ),
    "time-sliced pool the NVIDIA plugin never selects": (
        "nvidia-device-plugin-placement",
        lambda r: _del(pool(r, TS), [*TS_LABELS, "gpushare.io/device-plugin"]),
        ["NodePool g6-timeslice: spec.template.metadata.labels is", "never runs on these nodes"],
    ),
    "time-sliced pool outside the chart affinity": (
        "nvidia-device-plugin-placement",
        lambda r: _del(pool(r, TS), [*TS_LABELS, "nvidia.com/gpu.present"]),
        ["NodePool g6-timeslice", "required node affinity) never runs on these nodes"],
    ),
    "time-sliced pool also labelled for HAMi": (
        "nvidia-device-plugin-placement",
        lambda r: _set(pool(r, TS), [*TS_LABELS, "gpu"], "on"),
        ["NodePool g6-timeslice", "HAMi's device plugin also runs on nodes with gpu=on", "drop gpu"],
    ),
    "NVIDIA plugin without the GPU toleration": (
        "nvidia-device-plugin-placement",
        lambda r: _set(release(r, "nvidia-device-plugin"), ["values", "tolerations"], []),
        ['NodePool g6-timeslice: spec.template.spec.taints[0] is "nvidia.com/gpu:NoSchedule"', "values.tolerations"],
    ),
    "no NVIDIA plugin release": (
        "nvidia-device-plugin-placement",
        lambda r: drop(r, "Release", "nvidia-device-plugin"),
        ["NodePool g6-timeslice: takes whole or time-sliced GPUs but the stack has no `nvidia-device-plugin`"],
    ),
    "time-sliced pool names no time-slicing config": (
        "timeslice-overlays-match",
        lambda r: _set(pool(r, TS), [*TS_LABELS, "nvidia.com/device-plugin.config"], "timeslice-8"),
        ['labels["nvidia.com/device-plugin.config"] is "timeslice-8"', "exclusive, timeslice-4"],
    ),
    "time-slicing config without rename": (
        "timeslice-overlays-match",
        lambda r: _set(
            release(r, "nvidia-device-plugin"),
            ["values", "config", "map", "timeslice-4"],
            "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n",
        ),
        ['NodeOverlay g6-timeslice-g6-xlarge: spec.capacity["nvidia.com/gpu"] is "0"', "registers 4"],
    ),
    "time-sliced overlay promising more replicas": (
        "timeslice-overlays-match",
        lambda r: _set(overlay(r, TS_XL), ["spec", "capacity", GPU_SHARED], "8"),
        [f'NodeOverlay g6-timeslice-g6-xlarge: spec.capacity["{GPU_SHARED}"] is "8"', "registers 4", 'set it to "4"'],
    ),
    "time-sliced overlay keeps the type's GPUs": (
        "timeslice-overlays-match",
        lambda r: overlay(r, TS_XL)["spec"]["capacity"].pop("nvidia.com/gpu"),
        ['NodeOverlay g6-timeslice-g6-xlarge: spec.capacity["nvidia.com/gpu"] not set', 'nvidia.com/gpu: "0"'],
    ),
    "team without a time-sliced pool, uncapped replicas": (
        "team-namespace-gpu-quota",
        lambda r: find(r, "ResourceQuota", "inference-gpu")["spec"]["hard"].pop(f"requests.{GPU_SHARED}"),
        [f"Namespace inference: team namespace has no ResourceQuota on requests.{GPU_SHARED}"],
    ),
    "time-sliced overlay missing": (
        "timeslice-overlays-match",
        lambda r: drop(r, "NodeOverlay", TS_XL),
        [f"NodePool g6-timeslice: instance type g6.xlarge has no NodeOverlay setting {GPU_SHARED}"],
    ),
    "time-sliced pool limited in physical GPUs": (
        "timeslice-overlays-match",
        lambda r: _set(pool(r, TS), ["spec", "limits"], {"nvidia.com/gpu": "2"}),
        [f'NodePool g6-timeslice: spec.limits["{GPU_SHARED}"] not set', "maxGpus x 4"],
    ),
}


@pytest.mark.parametrize("case", list(PROD_CASES))
def test_one_broken_monitoring_field_is_caught(plans, case):
    policy, change, fragments = PROD_CASES[case]
    found = messages(broken(plans["prod"], change), policy)
    assert found, f"{policy} missed {case}"
    assert any(all(fragment in message for fragment in fragments) for message in found), found
    assert all("Fix:" in message for message in found)


def _renamed(inputs, name):
    import copy

    clone = copy.deepcopy(inputs)
    clone["metadata"]["name"] = name
    return clone


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    policy, change, fragments = CASES[case]
    found = messages(broken(plans["dev"], change), policy)
    assert found, f"{policy} missed {case}"
    assert any(all(fragment in message for fragment in fragments) for message in found), found
    assert all("Fix:" in message for message in found)


def test_every_rule_has_a_breaking_case():
    cases = [*CASES.values(), *PROD_CASES.values()]
    assert {policy for policy, _, _ in cases} == {rule.name for rule in RULES}


def test_below_registered_allowed_by_config(plans):
    resources = broken(plans["dev"], lambda r: _set(overlay(r), ["spec", "capacity", "nvidia.com/gpumem"], "20000"))
    assert messages(resources, "hami-overlay-capacity-matches", {"hami-overlay-capacity-matches": {}})
    config = {"hami-overlay-capacity-matches": {"allowBelowRegistered": True}}
    assert messages(resources, "hami-overlay-capacity-matches", config) == []
    more = broken(plans["dev"], lambda r: _set(overlay(r), ["spec", "capacity", "nvidia.com/gpumem"], "24000"))
    assert messages(more, "hami-overlay-capacity-matches", config), "more is refused whatever the config"


def test_profile_change_in_values_is_weighed(plans):
    split = ["values", "devicePlugin", "deviceSplitCount"]
    resources = broken(plans["dev"], lambda r: _set(release(r, "hami"), split, 5))
    found = messages(resources, "hami-overlay-capacity-matches")
    assert len(found) == 5 and all('["nvidia.com/gpu"]' in m and "deviceSplitCount 5" in m for m in found)


def test_heavier_duplicate_is_no_conflict(plans):
    def heavier(r):
        clone = _renamed(overlay(r), "second-xlarge")
        clone["spec"]["weight"] = 20
        r.append({**entry(r, "NodeOverlay", G5_XL), "urn": "urn:x", "inputs": clone})

    assert messages(broken(plans["dev"], heavier), "node-overlay-no-conflicts") == []


def test_limits_min_nodes_is_tunable(plans):
    resources = resources_of(plans["dev"])
    assert messages(resources, "nodepool-limits-admit-nodes") == []
    found = messages(resources, "nodepool-limits-admit-nodes", {"nodepool-limits-admit-nodes": {"minNodes": 5}})
    # g4dn-shared: maxGpus 4 is 40 vGPUs, four 1-GPU nodes of either type; g6-timeslice: 8 replicas, two nodes.
    assert [m.split(":")[0] for m in found] == ["NodePool g4dn-shared"] * 2 + ["NodePool g6-timeslice"] * 2
    assert "one g4dn.xlarge node counts 10 vGPUs" in found[0] and "(5 needed)" in found[0]
    assert "one g6.xlarge node counts 4 replicas (4 per GPU)" in found[2]


def test_karpenter_version_threshold_is_tunable(plans):
    config = {"karpenter-version-recommended": {"minimumVersion": "1.16.0"}}
    found = messages(resources_of(plans["dev"]), "karpenter-version-recommended", config)
    assert found == [found[0]] and "below 1.16.0" in found[0]


def test_endpoint_prefix_is_tunable(plans):
    resources = broken(plans["dev"], lambda r: _set(cluster(r), ["publicAccessCidrs"], ["10.0.0.0/8"]))
    config = {"eks-public-endpoint-restricted": {"minimumPrefixLength": 8}}
    assert messages(resources, "eks-public-endpoint-restricted", config) == []


def test_destroy_order_counts_indirect_dependencies(plans):
    # The pool still depends on the EC2NodeClass, which depends on both releases: destroy order holds.
    def only_node_class(r):
        deps = entry(r, "NodePool", G5)["dependencies"]
        entry(r, "NodePool", G5)["dependencies"] = [d for d in deps if "EC2NodeClass" in d]

    assert messages(broken(plans["dev"], only_node_class), "karpenter-objects-depend-on-releases") == []


def test_missing_crd_release_is_a_stack_violation(plans):
    resources = broken(plans["dev"], lambda r: drop(r, "Release", "karpenter-crd"))
    found = violations(resources, "karpenter-objects-depend-on-releases")
    assert [v.urn for v in found] == [None] and "no `karpenter-crd` Helm release" in found[0].message


def test_exclusive_only_team_needs_only_a_gpu_quota(plans):
    def gpu_only(r):
        hard = find(r, "ResourceQuota", "inference-gpu")["spec"]["hard"]
        del hard["requests.nvidia.com/gpumem"], hard["requests.nvidia.com/gpucores"]

    resources = broken(plans["prod"], gpu_only)
    assert messages(resources, "team-namespace-gpu-quota"), "a team on HAMi pools needs gpumem and gpucores quota"
    find(resources, "Namespace", "inference")["metadata"]["annotations"]["gpushare.io/pools"] = "training"
    assert messages(resources, "team-namespace-gpu-quota") == []


def test_time_sliced_team_needs_a_replica_quota(plans):
    resources = broken(
        plans["dev"],
        lambda r: find(r, "ResourceQuota", "ml-research-gpu")["spec"]["hard"].pop(f"requests.{GPU_SHARED}"),
    )
    assert messages(resources, "team-namespace-gpu-quota") == [
        f"Namespace ml-research: team namespace has no ResourceQuota on requests.{GPU_SHARED}: one team can take "
        "every shared GPU and the others' pods wait. Fix: add a ResourceQuota with spec.hard "
        f"requests.{GPU_SHARED} (gpushare renders it from teams[].quota)."
    ]


def test_aws_eks_cluster_shape_is_read(plans):
    """In a real preview the settings sit on pulumi-eks's child aws:eks/cluster:Cluster."""
    resources = resources_of(plans["prod"])
    aws_cluster = {
        "urn": "urn:pulumi:prod::gpushare::eks:index:Cluster$aws:eks/cluster:Cluster::gpushare-prod-eksCluster",
        "type": "aws:eks/cluster:Cluster",
        "name": "gpushare-prod-eksCluster",
        "inputs": {
            "version": "1.34",
            "encryptionConfig": {"provider": {"keyArn": "arn:aws:kms:us-east-1:1:key/x"}, "resources": ["secrets"]},
            "vpcConfig": {"endpointPublicAccess": True, "publicAccessCidrs": ["0.0.0.0/0"]},
        },
    }
    resources.append(aws_cluster)
    assert [m.split(": ")[0] for m in messages(resources, "eks-public-endpoint-restricted")] == [
        "aws:eks/cluster:Cluster gpushare-prod-eksCluster"
    ]
    assert messages(resources, "node-security-baseline") == []
    aws_cluster["inputs"]["encryptionConfig"]["resources"] = []
    assert "encryptionConfig not set" in messages(resources, "node-security-baseline")[0]


@pytest.mark.parametrize(
    "requirement",
    [
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-west-2a"]},
        {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["a10g"]},
        {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gt", "values": ["0"]},
        {"key": "karpenter.k8s.aws/instance-gpu-memory", "operator": "In", "values": ["22888"]},
        {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["g"]},
        {"key": "karpenter.k8s.aws/instance-generation", "operator": "In", "values": ["5"]},
        {"key": "karpenter.k8s.aws/instance-cpu-manufacturer", "operator": "In", "values": ["amd"]},
    ],
    ids=lambda r: r["key"].rsplit("/", 1)[-1],
)
def test_overlay_requirements_on_labels_karpenter_sets_are_not_unmet(plans, requirement):
    resources = broken(plans["dev"], lambda r: overlay(r)["spec"]["requirements"].append(requirement))
    for rule in ("hami-overlay-coverage", "hami-overlay-capacity-matches"):
        assert messages(resources, rule) == []


def test_startup_taints_need_no_toleration(plans):
    startup = {"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoExecute"}
    resources = broken(plans["dev"], lambda r: pool(r)["spec"]["template"]["spec"].update(startupTaints=[startup]))
    assert messages(resources, "hami-pool-labels-match-device-plugins") == []
    assert messages(resources, "nvidia-device-plugin-placement") == []


def test_a_digest_pinned_mock_image_is_still_the_mock(plans):
    digest = "sha256:" + "0" * 64
    resources = broken(
        plans["dev"],
        lambda r: _set(mock(r), ["spec", "template", "spec", "containers", 0, "image"], f"{MOCK_REPO}:1.0.1@{digest}"),
    )
    for rule in RULES:
        assert messages(resources, rule.name) == messages(resources_of(plans["dev"]), rule.name), rule.name


def test_an_unsupported_sharing_profile_is_one_finding_that_shows_the_value(plans):
    scaling = ["values", "devicePlugin", "deviceMemoryScaling"]
    resources = broken(plans["dev"], lambda r: _set(release(r, "hami"), scaling, 1.5))
    found = [v for v in violations(resources, "hami-overlay-capacity-matches")]
    assert [v.message.split(": input")[0] for v in found] == [
        "Release hami: values.devicePlugin.deviceMemoryScaling is 1.5"
    ]
    assert messages(resources, "team-quota-within-pool-limits") == [], "no false 'can provide at most 0'"


@pytest.mark.parametrize("gate", [True, "true", "True", "1"])
def test_feature_gate_texts_karpenter_parses_as_true_are_on(plans, gate):
    path = ["values", "settings", "featureGates", "nodeOverlay"]
    resources = broken(plans["dev"], lambda r: _set(release(r, "karpenter"), path, gate))
    assert messages(resources, "karpenter-node-overlay-enabled") == []


@pytest.mark.parametrize(
    "change",
    [
        lambda r: _set(
            release(r, "nvidia-device-plugin"),
            ["values", "config", "map", "timeslice-4"],
            "version: v1\nsharing:\n  timeSlicing:\n    resources: 5\n",
        ),
        lambda r: _set(
            release(r, "nvidia-device-plugin"),
            ["values", "config", "map", "timeslice-4"],
            "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu, replicas: true}\n",
        ),
        lambda r: _set(
            release(r, "nvidia-device-plugin"),
            ["values", "affinity"],
            {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": ["x"], "operator": "In", "values": 5}]}]
                    }
                }
            },
        ),
        lambda r: _set(find(r, "ValidatingAdmissionPolicyBinding", PER_GPU), ["spec", "validationActions"], 5),
        lambda r: _set(find(r, "ValidatingAdmissionPolicy", PER_GPU), ["spec", "validations"], 5),
    ],
    ids=[
        "resources-not-a-list",
        "replicas-a-boolean",
        "affinity-key-list-values-number",
        "actions-number",
        "validations-number",
    ],
)
def test_wrong_types_inside_values_and_policies_never_crash_a_rule(plans, change):
    resources = broken(plans["dev"], change)
    for rule in RULES:
        messages(resources, rule.name)  # must not raise


def test_a_cpu_nodepool_needs_no_device_plugin(plans):
    def cpu_pool(r):
        clone = _renamed(pool(r), "cpu")
        clone["spec"]["template"]["metadata"]["labels"] = {"gpushare.io/pool": "cpu"}
        clone["spec"]["template"]["spec"]["requirements"][0]["values"] = ["m7i.large"]
        r.append({**entry(r, "NodePool", G5), "urn": "urn:cpu", "inputs": clone})

    assert messages(broken(plans["prod"], cpu_pool), "nvidia-device-plugin-placement") == []
