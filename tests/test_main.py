"""Wiring of the Pulumi program, read off the offline plan recorded under Pulumi's mocks."""

from __future__ import annotations

import re
from typing import Any

import pytest

from gpushare import eks
from gpushare.loader import load_stack_config
from tests.conftest import PLAN_DATE, ROOT, on_minor, raw_stack
from tools.offline import run_program

STACKS = ("dev", "prod")
COMPONENT_PREFIX = "gpushare:index:"


def by_type(plan: dict[str, Any], token: str) -> list[dict[str, Any]]:
    return [r for r in plan["resources"] if r["type"] == token]


def one(plan: dict[str, Any], token: str, name: str) -> dict[str, Any]:
    [resource] = [r for r in by_type(plan, token) if r["name"] == name]
    return resource


def urn(plan: dict[str, Any], token: str, name: str) -> str:
    return one(plan, token, name)["urn"]


@pytest.mark.parametrize("stack", STACKS)
def test_plan_records_the_documented_fields(plans, stack):
    plan = plans[stack]
    assert (plan["project"], plan["stack"]) == ("gpushare", stack)
    assert all(v["level"] == "advisory" for v in plan["violations"])  # test_plan_cli pins which
    for resource in plan["resources"]:
        assert set(resource) == {"urn", "type", "name", "custom", "parent", "dependencies", "provider", "inputs"}


@pytest.mark.parametrize("stack", STACKS)
def test_every_resource_is_parented_to_a_component(plans, stack):
    components = {r["urn"] for r in plans[stack]["resources"] if r["type"].startswith(COMPONENT_PREFIX)}
    assert len(components) >= 7
    for resource in plans[stack]["resources"]:
        if resource["urn"] in components:
            assert resource["parent"].endswith(f"pulumi:pulumi:Stack::gpushare-{stack}")
        else:
            assert resource["parent"] in components, resource["urn"]


@pytest.mark.parametrize("stack", STACKS)
def test_every_child_is_named_from_its_component(plans, stack):
    """Two components can then never name children alike. Kubernetes objects and Helm releases are named
    from what they render (kind and name, release name), which their cluster already keeps unique."""
    resources = plans[stack]["resources"]
    components = {r["urn"]: r["name"] for r in resources if r["type"].startswith(COMPONENT_PREFIX)}
    aws_side = [r for r in resources if r["urn"] not in components and not r["type"].startswith("kubernetes:")]
    assert len(aws_side) > 20
    for resource in aws_side:
        component = components[resource["parent"]]
        assert resource["name"] == component or resource["name"].startswith(f"{component}-"), resource["urn"]


@pytest.mark.parametrize("stack", STACKS)
def test_every_kubernetes_resource_uses_the_cluster_provider(plans, stack):
    plan = plans[stack]
    [provider] = by_type(plan, "pulumi:providers:kubernetes")
    kube = [r for r in plan["resources"] if r["type"].startswith("kubernetes:")]
    assert len(kube) > 20
    for resource in kube:
        assert resource["provider"] == provider["urn"], resource["urn"]


@pytest.mark.parametrize("stack", STACKS)
def test_karpenter_objects_depend_on_both_releases(plans, stack):
    plan = plans[stack]
    releases = {urn(plan, "kubernetes:helm.sh/v3:Release", n) for n in ("karpenter", "karpenter-crd")}
    objects = (
        by_type(plan, "kubernetes:karpenter.sh/v1:NodePool")
        + by_type(plan, "kubernetes:karpenter.sh/v1alpha1:NodeOverlay")
        + by_type(plan, "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass")
        + by_type(plan, "kubernetes:autoscaling.x-k8s.io/v1beta1:CapacityBuffer")
    )
    assert objects
    for obj in objects:
        assert releases <= set(obj["dependencies"]), obj["urn"]


def test_node_pools_depend_on_node_class_overlays_and_their_device_plugin(plans):
    plan = plans["prod"]
    node_class = urn(plan, "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass", "ec2nodeclass-gpu")
    hami = urn(plan, "kubernetes:helm.sh/v3:Release", "hami")
    mock = urn(plan, "kubernetes:apps/v1:DaemonSet", "daemonset-kube-system-hami-mock-device-plugin")
    nvidia = urn(plan, "kubernetes:helm.sh/v3:Release", "nvidia-device-plugin")
    shared = set(one(plan, "kubernetes:karpenter.sh/v1:NodePool", "nodepool-g5-shared")["dependencies"])
    assert {node_class, hami, mock} <= shared
    assert urn(plan, "kubernetes:karpenter.sh/v1alpha1:NodeOverlay", "nodeoverlay-g5-shared-g5-xlarge") in shared
    exclusive = set(one(plan, "kubernetes:karpenter.sh/v1:NodePool", "nodepool-training")["dependencies"])
    assert {node_class, nvidia} <= exclusive
    assert hami not in exclusive


def test_warm_headroom_follows_its_template_namespace_and_node_pool(plans):
    """Created after, deleted before: the team namespace (its template), both Karpenter releases and its pool's
    NodePool, so destroy never leaves a buffer to a controller or pool that is gone."""
    plan = plans["prod"]
    template = one(plan, "kubernetes:core/v1:PodTemplate", "podtemplate-inference-gpushare-headroom-g5-shared")
    assert urn(plan, "kubernetes:core/v1:Namespace", "namespace-inference") in template["dependencies"]
    buffer = one(
        plan,
        "kubernetes:autoscaling.x-k8s.io/v1beta1:CapacityBuffer",
        "capacitybuffer-inference-gpushare-headroom-g5-shared",
    )
    assert {
        template["urn"],
        urn(plan, "kubernetes:helm.sh/v3:Release", "karpenter"),
        urn(plan, "kubernetes:helm.sh/v3:Release", "karpenter-crd"),
        urn(plan, "kubernetes:karpenter.sh/v1:NodePool", "nodepool-g5-shared"),
    } <= set(buffer["dependencies"])
    assert buffer["inputs"]["spec"]["podTemplateRef"] == {"name": template["inputs"]["metadata"]["name"]}
    karpenter = one(plan, "kubernetes:helm.sh/v3:Release", "karpenter")["inputs"]["values"]["settings"]
    assert karpenter["featureGates"] == {"nodeOverlay": True, "capacityBuffer": True}
    assert not by_type(plans["dev"], "kubernetes:autoscaling.x-k8s.io/v1beta1:CapacityBuffer")


def test_karpenter_controller_waits_for_its_iam_queue_and_nodes(plans):
    plan = plans["dev"]
    deps = set(one(plan, "kubernetes:helm.sh/v3:Release", "karpenter")["dependencies"])
    expected = {
        urn(plan, "kubernetes:helm.sh/v3:Release", "karpenter-crd"),
        urn(plan, "aws:eks/podIdentityAssociation:PodIdentityAssociation", "gpushare-dev-karpenter"),
        urn(plan, "aws:iam/rolePolicy:RolePolicy", "gpushare-dev-karpenter-controller"),
        urn(plan, "aws:eks/accessEntry:AccessEntry", "gpushare-dev-karpenter-node"),
        urn(plan, "eks:index:ManagedNodeGroup", "gpushare-dev-system"),
        urn(plan, "aws:cloudwatch/eventTarget:EventTarget", "gpushare-dev-karpenter-spot-interruption"),
    }
    assert expected <= deps


def test_mock_plugin_depends_on_the_hami_release(plans):
    plan = plans["dev"]
    hami = urn(plan, "kubernetes:helm.sh/v3:Release", "hami")
    for token in ("kubernetes:apps/v1:DaemonSet", "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"):
        for resource in by_type(plan, token):
            assert hami in resource["dependencies"]


def test_cluster_is_private_encrypted_logged_and_api_authenticated(plans):
    inputs = one(plans["prod"], "eks:index:Cluster", "gpushare-prod")["inputs"]
    assert inputs["authenticationMode"] == "API"
    assert inputs["skipDefaultNodeGroup"] is True
    assert inputs["endpointPublicAccess"] is False
    assert inputs["encryptionConfigKeyArn"].startswith("arn:aws:kms:us-east-1:")
    assert set(inputs["enabledClusterLogTypes"]) == {"api", "audit", "authenticator", "controllerManager", "scheduler"}


def test_karpenter_release_values_and_controller_policy(plans):
    plan = plans["dev"]
    release = one(plan, "kubernetes:helm.sh/v3:Release", "karpenter")["inputs"]
    assert release["chart"] == "oci://public.ecr.aws/karpenter/karpenter"
    assert release["values"]["settings"]["featureGates"] == {"nodeOverlay": True}
    assert release["skipCrds"] is True
    import json

    policy = json.loads(
        one(plan, "aws:iam/rolePolicy:RolePolicy", "gpushare-dev-karpenter-controller")["inputs"]["policy"]
    )
    unscoped = {s["Sid"] for s in policy["Statement"] if s["Resource"] == "*"}
    # Upstream's unscoped reads; the zonal-shift read is conditioned on this cluster's ARN.
    assert unscoped == {
        "AllowRegionalReadActions",
        "AllowPricingReadActions",
        "AllowUnscopedInstanceProfileListAction",
        "AllowZonalShiftStatusReadOnly",
    }, "only reads may be unscoped"
    describe = next(s for s in policy["Statement"] if s["Sid"] == "AllowAPIServerEndpointDiscovery")
    assert describe["Resource"] == "arn:aws:eks:us-west-2:123456789012:cluster/gpushare-dev"
    pass_role = next(s for s in policy["Statement"] if s["Sid"] == "AllowPassingInstanceRole")
    assert pass_role["Resource"] == "arn:aws:iam::123456789012:role/gpushare-dev-karpenter-node"


def test_interruption_queue_is_encrypted_and_fed_by_five_rules(plans):
    plan = plans["dev"]
    queue = one(plan, "aws:sqs/queue:Queue", "gpushare-dev-karpenter")["inputs"]
    assert queue["sqsManagedSseEnabled"] is True and queue["messageRetentionSeconds"] == 300
    assert len(by_type(plan, "aws:cloudwatch/eventRule:EventRule")) == 5


def test_team_access_is_scoped_to_its_namespace(plans):
    plan = plans["prod"]
    associations = by_type(plan, "aws:eks/accessPolicyAssociation:AccessPolicyAssociation")
    assert {tuple(a["inputs"]["accessScope"]["namespaces"]) for a in associations} == {("ml-research",), ("inference",)}
    assert all(a["inputs"]["accessScope"]["type"] == "namespace" for a in associations)


@pytest.mark.parametrize("stack", STACKS)
def test_stack_outputs(plans, stack):
    outputs = plans[stack]["outputs"]
    assert outputs["clusterName"] == f"gpushare-{stack}"
    assert outputs["kubeconfig"] == "[secret]"
    assert outputs["karpenterQueueName"] == f"gpushare-{stack}-karpenter"
    assert outputs["karpenterNodeRoleArn"].endswith(f":role/gpushare-{stack}-karpenter-node")
    assert outputs["karpenterControllerRoleArn"].endswith(f":role/gpushare-{stack}-karpenter-controller")
    assert outputs["pools"]["g5-shared"]["vgpusPerNode"]["g5.xlarge"] == 10


def test_new_vpc_spans_zones_with_tagged_private_subnets(plans):
    subnets = by_type(plans["prod"], "aws:ec2/subnet:Subnet")
    private = [s for s in subnets if "private" in s["name"]]
    assert len(private) == 3
    assert all(s["inputs"]["tags"]["karpenter.sh/discovery"] == "gpushare-prod" for s in private)
    zone_ids = {s["inputs"]["availabilityZoneId"] for s in private}
    # prod is us-east-1: use1-az3 is one EKS refuses, so the third zone is use1-az4.
    assert zone_ids == {"use1-az1", "use1-az2", "use1-az4"}
    assert not any(s["inputs"].get("mapPublicIpOnLaunch", False) for s in subnets)


def test_private_endpoint_admits_the_configured_ranges_on_443(plans):
    [rule] = by_type(plans["prod"], "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
    assert rule["inputs"]["cidrIpv4"] == "10.200.0.0/16"
    assert (rule["inputs"]["fromPort"], rule["inputs"]["toPort"], rule["inputs"]["ipProtocol"]) == (443, 443, "tcp")
    assert rule["inputs"]["securityGroupId"].startswith("sg-")
    assert by_type(plans["dev"], "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule") == []


def test_control_plane_logs_go_to_a_group_the_stack_owns(plans):
    [group] = by_type(plans["prod"], "aws:cloudwatch/logGroup:LogGroup")
    assert group["inputs"]["name"] == "/aws/eks/gpushare-prod/cluster"
    assert group["inputs"]["retentionInDays"] == 90
    cluster = one(plans["prod"], "eks:index:Cluster", "gpushare-prod")
    assert group["urn"] in cluster["dependencies"]
    assert cluster["inputs"]["upgradePolicy"] == {"supportType": "STANDARD"}


def test_no_arn_spells_a_partition():
    """GovCloud and China need aws-us-gov/aws-cn: every ARN takes the partition looked up once."""
    sources = [*ROOT.glob("components/*.py"), *ROOT.glob("gpushare/render/*.py"), ROOT / "__main__.py"]
    assert len(sources) > 10
    offenders = [str(path) for path in sources if re.search(r"[\"']arn:aws:", path.read_text())]
    assert offenders == []


def test_cluster_security_group_is_discoverable_by_karpenter(plans):
    [tag] = by_type(plans["dev"], "aws:ec2/tag:Tag")
    assert tag["inputs"]["key"] == "karpenter.sh/discovery" and tag["inputs"]["value"] == "gpushare-dev"
    assert tag["inputs"]["resourceId"].startswith("sg-")
    cluster = one(plans["dev"], "eks:index:Cluster", "gpushare-dev")["inputs"]
    assert cluster["skipDefaultSecurityGroups"] is True


def test_prometheus_volume_gets_the_ebs_csi_driver(plans):
    """prod runs its own Prometheus on an EBS volume: the driver add-on with a Pod Identity role; dev needs none."""
    [addon] = [
        a for a in by_type(plans["prod"], "aws:eks/addon:Addon") if a["inputs"]["addonName"] == "aws-ebs-csi-driver"
    ]
    [association] = addon["inputs"]["podIdentityAssociations"]
    assert association["serviceAccount"] == "ebs-csi-controller-sa"
    [attachment] = [
        a for a in by_type(plans["prod"], "aws:iam/rolePolicyAttachment:RolePolicyAttachment") if "ebs-csi" in a["name"]
    ]
    assert attachment["inputs"]["policyArn"] == "arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy"
    assert not [
        a for a in by_type(plans["dev"], "aws:eks/addon:Addon") if a["inputs"]["addonName"] == "aws-ebs-csi-driver"
    ]


def _claim_owners(values: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """(path, spec) of every map in Helm values that asks a volume claim: a `storageSpec.volumeClaimTemplate`
    (prometheus-operator's Prometheus and Alertmanager) or `persistence.enabled: true` (Grafana and most charts)."""
    found = []
    if isinstance(values, dict):
        if "volumeClaimTemplate" in (values.get("storageSpec") or {}) or (values.get("persistence") or {}).get(
            "enabled"
        ):
            found.append((path, values))
        for key, value in values.items():
            found += _claim_owners(value, f"{path}.{key}" if path else key)
    return found


@pytest.mark.parametrize("stack", STACKS)
def test_every_volume_claim_goes_before_the_ebs_csi_driver_on_destroy(plans, stack):
    """Destroy runs in reverse dependency order: a release keeping a volume claim depends on the EBS CSI add-on,
    so its claim (and EBS volume) is deleted while the driver still runs, and the claim goes with its
    StatefulSet instead of the default Retain that leaves the volume billing."""
    plan = plans[stack]
    drivers = [
        a["urn"] for a in by_type(plan, "aws:eks/addon:Addon") if a["inputs"]["addonName"] == "aws-ebs-csi-driver"
    ]
    claimed = [(r, _claim_owners(r["inputs"]["values"])) for r in by_type(plan, "kubernetes:helm.sh/v3:Release")]
    claimed = [(release, owners) for release, owners in claimed if owners]
    assert bool(claimed) == bool(drivers) == (stack == "prod")
    for release, owners in claimed:
        assert set(drivers) <= set(release["dependencies"]), release["name"]
        # A StatefulSet's claims outlive it unless told otherwise; a chart's own claim goes with the release.
        for path, spec in owners:
            if "storageSpec" in spec:
                retention = spec.get("persistentVolumeClaimRetentionPolicy", {})
                assert retention.get("whenDeleted") == "Delete", f"{release['name']} {path}"


def test_system_nodes_keep_pods_away_from_the_node_role(plans):
    [template] = by_type(plans["dev"], "aws:ec2/launchTemplate:LaunchTemplate")
    metadata = template["inputs"]["metadataOptions"]
    assert (metadata["httpTokens"], metadata["httpPutResponseHopLimit"]) == ("required", 1)
    assert template["inputs"]["blockDeviceMappings"][0]["ebs"]["volumeSize"] == 50


@pytest.mark.plan
def test_extended_support_reaches_the_cluster_and_keeps_a_version_past_standard_support():
    """The opt-in is what the EKS cluster gets as its upgrade policy, and it is what lets the program plan 1.34 on
    the day its standard support ends (tests/gpushare/test_eks.py covers the refusals)."""
    raw = on_minor(raw_stack("dev"), "1.34")
    raw["gpushare:cluster"]["supportType"] = "EXTENDED"
    end = eks.load_eks_support().versions["1.34"].end_of_standard_support
    recorded = run_program(raw, "dev", end).recorded
    [cluster] = [r for r in recorded if r["type"] == "eks:index:Cluster"]
    assert (cluster["inputs"]["version"], cluster["inputs"]["upgradePolicy"]) == ("1.34", {"supportType": "EXTENDED"})


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_config_names_the_charts_the_program_deploys(stack, plans):
    """StackConfig.charts(), which the config checks read, is what the plan holds."""
    config = load_stack_config(raw_stack(stack), today=PLAN_DATE)
    deployed = {
        r["inputs"]["chart"].rsplit("/", 1)[-1]
        for r in plans[stack]["resources"]
        if r["type"] == "kubernetes:helm.sh/v3:Release"
    }
    assert config.charts() == deployed
