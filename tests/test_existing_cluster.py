"""Wiring of the existing-cluster mode, read off the offline plan of Pulumi.existing.yaml recorded under mocks: no AWS
resource or call, one explicit Kubernetes provider, and a Karpenter gate check that stops `pulumi up`."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from gpushare.existing import CAPACITY_BUFFER_GATE, NODE_OVERLAY_GATE
from gpushare.loader import load_stack_config
from tests.conftest import PLAN_DATE, raw_stack, run_plan
from tests.test_main import COMPONENT_PREFIX, by_type, one, urn
from tools.offline import PlanMocks, run_program

EC2_NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
KARPENTER_READ = "urn:pulumi:existing::gpushare::gpushare:index:ExistingCluster$kubernetes:apps/v1:Deployment::"


class RecordingCalls(PlanMocks):
    """The plan's mocks, keeping every provider function the program calls."""

    def __init__(self, region: str, gates: str | None = None) -> None:
        super().__init__(region, *([gates] if gates is not None else []))
        self.calls: list[str] = []

    def call(self, args: Any) -> Any:
        self.calls.append(args.token)
        return super().call(args)


def test_the_plan_holds_no_aws_resource(plans):
    types = {r["type"] for r in plans["existing"]["resources"]}
    assert not [t for t in types if t.startswith(("aws:", "eks:", "pulumi:providers:aws", "pulumi:providers:eks"))]
    assert "kubernetes:helm.sh/v3:Release" in types and EC2_NODE_CLASS in types


def test_the_program_calls_no_aws_function():
    mocks = RecordingCalls("us-west-2")
    recorded = run_program(raw_stack("existing"), "existing", PLAN_DATE, mocks).recorded
    assert recorded and mocks.calls == []


def test_one_explicit_provider_serves_every_kubernetes_resource(plans):
    plan = plans["existing"]
    [provider] = by_type(plan, "pulumi:providers:kubernetes")
    assert provider["inputs"] == {"context": "platform-prod", "enableServerSideApply": "true"}
    kube = [r for r in plan["resources"] if r["type"].startswith("kubernetes:")]
    assert len(kube) > 40
    assert all(r["provider"] == provider["urn"] for r in kube)


def test_a_kubeconfig_secret_reaches_the_provider_as_a_secret():
    raw = raw_stack("existing")
    kubeconfig = {"apiVersion": "v1", "clusters": [{"name": "c", "cluster": {"server": "https://203.0.113.10"}}]}
    raw["gpushare:existingCluster"]["kubeconfig"] = json.dumps(kubeconfig)
    raw["gpushare:existingCluster"].pop("context")
    recorded = run_program(raw, "existing", PLAN_DATE).recorded
    [provider] = [r for r in recorded if r["type"] == "pulumi:providers:kubernetes"]
    assert provider["inputs"]["kubeconfig"] == "[secret]" and "context" not in provider["inputs"]


def test_every_resource_is_parented_to_a_component(plans):
    resources = plans["existing"]["resources"]
    components = {r["urn"] for r in resources if r["type"].startswith(COMPONENT_PREFIX)}
    for resource in resources:
        if resource["urn"] in components:
            assert resource["parent"].endswith("pulumi:pulumi:Stack::gpushare-existing")
        else:
            assert resource["parent"] in components, resource["urn"]


def test_no_karpenter_release_and_the_node_class_the_stack_file_names(plans):
    plan = plans["existing"]
    releases = {r["inputs"]["name"] for r in by_type(plan, "kubernetes:helm.sh/v3:Release")}
    assert releases == {"hami", "nvidia-device-plugin", "kube-prometheus-stack", "dcgm-exporter", "hami-webui"}
    # StackConfig.charts(), which the config checks read, is what the plan holds.
    charts = {r["inputs"]["chart"].rsplit("/", 1)[-1] for r in by_type(plan, "kubernetes:helm.sh/v3:Release")}
    assert load_stack_config(raw_stack("existing"), today=PLAN_DATE).charts() == charts
    spec = one(plan, EC2_NODE_CLASS, "ec2nodeclass-gpu")["inputs"]["spec"]
    assert spec["role"] == "KarpenterNodeRole-platform-prod" and "instanceProfile" not in spec
    discovery = [{"tags": {"karpenter.sh/discovery": "platform-prod"}}]
    assert spec["subnetSelectorTerms"] == spec["securityGroupSelectorTerms"] == discovery


def test_selector_terms_and_an_instance_profile_as_written():
    raw = raw_stack("existing")
    raw["gpushare:existingCluster"]["nodeClass"] = {
        "instanceProfile": "gpu-nodes",
        "subnetSelectorTerms": [{"id": "subnet-0123456789abcdef0"}, {"tags": {"tier": "gpu"}}],
        "securityGroupSelectorTerms": [{"name": "gpu-nodes"}],
    }
    recorded = run_program(raw, "existing", PLAN_DATE).recorded
    [node_class] = [r for r in recorded if r["type"] == EC2_NODE_CLASS]
    spec = node_class["inputs"]["spec"]
    assert spec["instanceProfile"] == "gpu-nodes" and "role" not in spec
    assert spec["subnetSelectorTerms"] == [{"id": "subnet-0123456789abcdef0"}, {"tags": {"tier": "gpu"}}]
    assert spec["securityGroupSelectorTerms"] == [{"name": "gpu-nodes"}]


def test_karpenter_objects_wait_for_the_gate_check(plans):
    """The node class depends on the read of the running Karpenter's Deployment (whose gates are checked before it
    resolves); every pool and overlay depends on the node class, every buffer on its pool."""
    plan = plans["existing"]
    node_class = one(plan, EC2_NODE_CLASS, "ec2nodeclass-gpu")
    assert node_class["dependencies"] == [f"{KARPENTER_READ}existing-cluster-karpenter"]
    objects = by_type(plan, "kubernetes:karpenter.sh/v1:NodePool") + by_type(
        plan, "kubernetes:karpenter.sh/v1alpha1:NodeOverlay"
    )
    assert len(objects) == 5
    assert all(node_class["urn"] in obj["dependencies"] for obj in objects)
    [buffer] = by_type(plan, "kubernetes:autoscaling.x-k8s.io/v1beta1:CapacityBuffer")
    assert urn(plan, "kubernetes:karpenter.sh/v1:NodePool", "nodepool-g5-shared") in buffer["dependencies"]


def test_the_component_records_what_the_stack_states_for_the_policy_pack(plans):
    [component] = by_type(plans["existing"], "gpushare:index:ExistingCluster")
    assert component["inputs"] == {
        "clusterName": "platform-prod",
        "kubernetesVersion": "1.36",
        "karpenter": {
            "version": "1.15.1",
            "namespace": "kube-system",
            "deployment": "karpenter",
            "featureGates": {"nodeOverlay": True, "capacityBuffer": True},
        },
    }


@pytest.mark.parametrize(
    ("gates", "off"),
    [
        ("NodeOverlay=false,CapacityBuffer=true", [NODE_OVERLAY_GATE]),
        ("NodeOverlay=true", [CAPACITY_BUFFER_GATE]),
        ("", [NODE_OVERLAY_GATE, CAPACITY_BUFFER_GATE]),
    ],
    ids=["overlay off", "buffer left out", "none"],
)
def test_a_karpenter_without_the_gates_stops_pulumi_up_naming_each(gates, off):
    with pytest.raises(Exception, match="Karpenter kube-system/karpenter runs with FEATURE_GATES") as error:
        run_program(raw_stack("existing"), "existing", PLAN_DATE, PlanMocks("us-west-2", gates))
    found = str(error.value).splitlines()
    assert [line.split(": the ", 1)[1].split(" gate is off")[0] for line in found] == off
    assert all(line.endswith("and run pulumi up again") for line in found)


def test_gate_texts_karpenter_parses_as_true_pass():
    run_program(raw_stack("existing"), "existing", PLAN_DATE, PlanMocks("us-west-2", "NodeOverlay=1, CapacityBuffer=T"))


def test_the_scrape_of_karpenter_targets_the_running_one(plans):
    raw = raw_stack("existing")
    raw["gpushare:existingCluster"]["karpenter"].update(namespace="karpenter", deployment="platform-karpenter")
    recorded = run_program(raw, "existing", PLAN_DATE).recorded
    [monitor] = [
        r["inputs"]
        for r in recorded
        if r["type"].endswith(":ServiceMonitor") and r["inputs"]["metadata"]["name"] == "karpenter"
    ]
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["karpenter"]}
    assert monitor["spec"]["selector"]["matchLabels"]["app.kubernetes.io/instance"] == "platform-karpenter"


def test_outputs_name_the_cluster_and_pools_only(plans):
    outputs = plans["existing"]["outputs"]
    assert set(outputs) == {"clusterName", "pools"} and outputs["clusterName"] == "platform-prod"


def test_make_plan_passes_the_pack_and_writes_no_aws_resource(plans):
    out = plans["existing"]["_stdout"]
    assert "gpushare-policies: 0 mandatory, 0 advisory violation(s)" in out
    assert plans["existing"]["violations"] == []


def test_charts_from_a_folder_reach_the_releases_and_deviations_are_warned(tmp_path):
    folder = tmp_path / "charts"
    folder.mkdir()
    for archive in ("hami-2.10.0.tgz", "nvidia-device-plugin-0.20.0.tgz", "dcgm-exporter-4.8.2.tgz"):
        (folder / archive).write_bytes(b"")
    for archive in ("hami-webui-1.2.0.tgz", "kube-prometheus-stack-88.5.3.tgz"):
        (folder / archive).write_bytes(b"")
    raw = raw_stack("existing")
    raw["gpushare:charts"] = {"folder": str(folder)}
    stack_file = tmp_path / "Pulumi.offline.yaml"
    stack_file.write_text(yaml.safe_dump({"config": raw}))
    completed = run_plan(stack_file, tmp_path / "out")
    assert completed.returncode == 0, completed.stderr
    warnings = [line for line in completed.stderr.splitlines() if line.startswith("warning: gpushare:charts.folder")]
    assert len(warnings) == 2 and all("(a deviation" in line for line in warnings)
    hami = yaml.safe_load((tmp_path / "out" / "offline" / "helm" / "hami.yaml").read_text())
    assert (hami["chart"], hami["version"], hami["repository"]) == (str(folder / "hami-2.10.0.tgz"), "2.10.0", None)
    plugin = yaml.safe_load((tmp_path / "out" / "offline" / "helm" / "nvidia-device-plugin.yaml").read_text())
    assert (plugin["chart"], plugin["version"]) == (str(folder / "nvidia-device-plugin-0.20.0.tgz"), "0.20.0")


def test_a_folder_lacking_an_archive_exits_2_and_writes_nothing(tmp_path):
    raw = raw_stack("existing")
    raw["gpushare:charts"] = {"folder": str(tmp_path)}
    stack_file = tmp_path / "Pulumi.offline.yaml"
    stack_file.write_text(yaml.safe_dump({"config": raw}))
    completed = run_plan(stack_file, tmp_path / "out")
    assert completed.returncode == 2
    assert completed.stderr.startswith("error: gpushare:charts.folder: ") and completed.stderr.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_make_plan_refuses_every_bad_key_of_the_mode_one_line_each(tmp_path):
    raw = raw_stack("existing")
    raw["gpushare:cluster"]["network"] = {"vpcCidr": "10.20.0.0/16"}
    raw["gpushare:existingCluster"]["karpenter"]["featureGates"]["nodeOverlay"] = False
    raw["gpushare:existingCluster"]["nodeClass"]["instanceProfile"] = "gpu-nodes"
    stack_file = tmp_path / "Pulumi.mixed.yaml"
    stack_file.write_text(yaml.safe_dump({"config": raw}))
    completed = run_plan(stack_file, tmp_path / "out")
    assert completed.returncode == 2 and "Traceback" not in completed.stderr
    keys = sorted(line.split(": ", 2)[1] for line in completed.stderr.splitlines())
    assert keys == [
        "gpushare:cluster.network",
        "gpushare:existingCluster.karpenter.featureGates.nodeOverlay",
        "gpushare:existingCluster.nodeClass.role",
    ], completed.stderr
    assert not (tmp_path / "out").exists()
