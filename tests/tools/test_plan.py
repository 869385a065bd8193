"""`make plan` as a user meets it: output files, summary, determinism, and bad input."""

from __future__ import annotations

import pytest
import yaml

from gpushare import eks, pins
from tests.conftest import ROOT, raw_stack, run_plan

# Every test here runs `make plan` in a fresh interpreter, or reads the shipped plans.
pytestmark = pytest.mark.plan


def test_plan_writes_manifests_and_helm_values(plans):
    folder = plans["prod"]["_folder"]
    manifests = sorted(p.name for p in (folder / "manifests").iterdir())
    assert "nodepool-g5-shared.yaml" in manifests and "ec2nodeclass-gpu.yaml" in manifests
    overlay = yaml.safe_load((folder / "manifests" / "nodeoverlay-g5-shared-g5-xlarge.yaml").read_text())
    assert overlay["spec"]["capacity"]["nvidia.com/gpumem"] == "23028"
    helm = {p.name for p in (folder / "helm").iterdir()}
    stack = {"karpenter-crd.yaml", "karpenter.yaml", "hami.yaml", "nvidia-device-plugin.yaml"}
    assert helm == stack | {"kube-prometheus-stack.yaml", "dcgm-exporter.yaml", "hami-webui.yaml"}
    hami = yaml.safe_load((folder / "helm" / "hami.yaml").read_text())
    assert (hami["chart"], hami["version"], hami["repository"]) == (
        "hami",
        pins.chart_version("hami"),
        pins.chart_repository("hami"),
    )


def test_plan_prints_capacity_and_cost_summary(plans):
    out = plans["dev"]["_stdout"]
    assert "g5-shared     hami       g5.4xlarge     1     10      23028       100       8               1.624" in out
    assert "g6-timeslice  timeslice  g6.xlarge      1     4       -           -         2               0.805" in out
    assert "prices: us-east-1 on-demand, 2026-07-20" in out


def test_plan_prints_what_each_teams_warm_headroom_costs(plans):
    """prod keeps two inference pods warm on g5-shared: one g5.xlarge holds three of them."""
    out = plans["prod"]["_stdout"]
    assert "warm headroom (CapacityBuffers; at these prices): no team quota is charged for it" in out
    assert "inference  g5-shared  2          1 vGPU 7676 MiB 33% + 1 CPU 4096 MiB  1 x g5.xlarge  1.006  24.14" in out
    assert "warm headroom" not in plans["dev"]["_stdout"]


def test_same_input_same_output(plans, tmp_path):
    assert run_plan(ROOT / "Pulumi.dev.yaml", tmp_path).returncode == 0
    first = plans["dev"]["_folder"]
    for path in sorted(first.rglob("*")):
        if path.is_file():
            assert (tmp_path / "dev" / path.relative_to(first)).read_bytes() == path.read_bytes(), path.name


def test_bad_config_exits_2_with_one_line_and_writes_nothing(tmp_path):
    raw = raw_stack("dev")
    raw["gpushare:pools"][0]["instanceTypes"][0] = "g5.huge"
    stack_file = tmp_path / "Pulumi.broken.yaml"
    stack_file.write_text(yaml.safe_dump({"config": raw}))
    completed = run_plan(stack_file, tmp_path / "out")
    assert completed.returncode == 2
    assert completed.stderr.startswith("error: gpushare:pools[0].instanceTypes[0]: 'g5.huge' is not in the GPU catalog")
    assert completed.stderr.count("\n") == 1 and "Traceback" not in completed.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("gpushare:karpenter", {"chartVersion": "v1.15.1"}, "error: gpushare:karpenter.chartVersion: 'v1.15.1'"),
        ("gpushare:cluster", {"tags": {"karpenter.sh/nodepool": "x"}}, "error: gpushare:cluster.tags.karpenter.sh"),
    ],
    ids=["v-prefixed chart", "tag Karpenter sets"],
)
def test_what_the_pack_caught_after_rendering_is_a_config_error(tmp_path, key, value, message):
    """Exit 2 before anything is written, where the pack used to exit 1 after the plan was rendered."""
    raw = raw_stack("dev")
    raw[key].update(value)
    stack_file = tmp_path / "Pulumi.typo.yaml"
    stack_file.write_text(yaml.safe_dump({"config": raw}))
    completed = run_plan(stack_file, tmp_path / "out")
    assert completed.returncode == 2
    assert completed.stderr.startswith(message) and completed.stderr.count("\n") == 1, completed.stderr
    assert not (tmp_path / "out").exists()


def test_unreadable_stack_file_exits_2(tmp_path):
    missing = run_plan(tmp_path / "Pulumi.nope.yaml", tmp_path / "out")
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    garbage = tmp_path / "Pulumi.garbage.yaml"
    garbage.write_text("config: [unclosed")
    bad = run_plan(garbage, tmp_path / "out")
    assert (
        bad.returncode == 2
        and "YAML syntax error at line 2 col 1: did not find expected" in bad.stderr
        and "Traceback" not in bad.stderr
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "config:\n  aws:region: us-west-2\n  gpushare:pools: []\n  aws:region: eu-west-1\n",
            "YAML error at line 4 col 3: duplicate key 'aws:region' (first on line 2)",
        ),
        (
            "config:\n  gpushare:teams:\n    - name: a\n      name: b\n",
            "YAML error at line 4 col 7: duplicate key 'name' (first on line 3)",
        ),
        (
            "config:\n\taws:region: us-west-2\n",
            "YAML syntax error at line 2 col 1: tabs are not allowed for indentation in YAML",
        ),
        (
            "config:\n  gpushare:pools:\n  - name: a\n    \tmaxGpus: 3\n",
            "YAML syntax error at line 4 col 5: tabs are not allowed for indentation in YAML",
        ),
        ("config:\n  aws:region: [us-west-2\n", "YAML syntax error at line 3 col 1: did not find expected ',' or ']'"),
    ],
    ids=["top-level key", "nested key", "tab at the start", "tab after spaces", "syntax"],
)
def test_stack_file_mistakes_yaml_hides_are_refused_with_line_and_column(tmp_path, text, message):
    stack_file = tmp_path / "Pulumi.typo.yaml"
    stack_file.write_text(text)
    completed = run_plan(stack_file, tmp_path / "out")
    assert completed.returncode == 2
    assert completed.stderr == f"error: {stack_file}: {message}\n"
    assert not (tmp_path / "out").exists()


def test_plan_records_and_prints_policy_violations(plans):
    dev = plans["dev"]
    assert [(v["policy"], v["level"]) for v in dev["violations"]] == [
        ("eks-public-endpoint-restricted", "advisory"),
        ("hami-pool-one-priority-tier", "advisory"),
    ]
    assert dev["violations"][0]["urn"].endswith("eks:index:Cluster::gpushare-dev")
    assert (
        "gpushare-policies: 0 mandatory, 2 advisory violation(s) (policy config: policies/config/dev.json)"
        in (dev["_stdout"])
    )
    assert plans["prod"]["violations"] == []


def test_mandatory_violation_fails_the_plan_but_writes_it(tmp_path):
    # The dev settings under a stack name with no policy config: the open endpoint is mandatory there.
    stack_file = tmp_path / "Pulumi.staging.yaml"
    stack_file.write_text(yaml.safe_dump({"config": raw_stack("dev")}))
    completed = run_plan(stack_file, tmp_path / "out")
    assert completed.returncode == 1, completed.stderr
    assert "[mandatory] eks-public-endpoint-restricted (high)" in completed.stdout
    assert (tmp_path / "out" / "staging" / "plan.json").exists()


def test_a_version_past_eks_standard_support_exits_2_unless_extended(tmp_path):
    """The CLI judges the day it is given: the same stack plans before the end of standard support, not after."""
    end = eks.load_eks_support().versions["1.36"].end_of_standard_support
    stack_file = tmp_path / "Pulumi.dev.yaml"
    stack_file.write_text(yaml.safe_dump({"config": raw_stack("dev")}))
    completed = run_plan(stack_file, tmp_path / "out", end)
    assert completed.returncode == 2
    assert completed.stderr.startswith(
        f"error: gpushare:cluster.kubernetesVersion: 1.36 is past EKS standard support (ended {end})"
    )
    assert "gpushare:cluster.supportType EXTENDED" in completed.stderr and "Traceback" not in completed.stderr
    assert completed.stderr.count("\n") == 1 and not (tmp_path / "out").exists()


def test_a_p5_hami_pool_plans_with_the_memory_factor_that_fits(tmp_path):
    """The catalog's largest types as a HAMi pool: memoryFactor 6 brings a p5.48xlarge (8 x 81559 MiB) under the
    mock's ceiling; overlays, quotas, the mock's config and HAMi's agree on units of 6 MiB, and the pack passes."""
    raw = raw_stack("prod")
    raw["gpushare:hami"]["profile"]["memoryFactor"] = 6
    raw["gpushare:pools"].append(
        {"name": "h100-shared", "instanceTypes": ["p5.48xlarge"], "maxGpus": 16, "sharing": "hami"}
    )
    raw["gpushare:teams"][0]["pools"].append("h100-shared")
    stack_file = tmp_path / "Pulumi.prod.yaml"
    stack_file.write_text(yaml.safe_dump({"config": raw}))
    completed = run_plan(stack_file, tmp_path / "out")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "0 mandatory" in completed.stdout
    assert "h100-shared  hami       p5.48xlarge    8     80      652470      800" in completed.stdout
    assert "in units of 6 MiB (memoryFactor 6)" in completed.stdout
    manifests = tmp_path / "out" / "prod" / "manifests"
    overlay = yaml.safe_load((manifests / "nodeoverlay-h100-shared-p5-48xlarge.yaml").read_text())
    assert overlay["spec"]["capacity"]["nvidia.com/gpumem"] == str(8 * 81559 // 6)
    quota = yaml.safe_load((manifests / "resourcequota-ml-research-ml-research-gpu.yaml").read_text())
    assert quota["spec"]["hard"]["limits.nvidia.com/gpumem"] == str(368448 // 6)
    mock = yaml.safe_load((manifests / "configmap-kube-system-hami-mock-device-config.yaml").read_text())
    assert yaml.safe_load(mock["data"]["device-config.yaml"])["nvidia"]["memoryFactor"] == 6
    hami = yaml.safe_load((tmp_path / "out" / "prod" / "helm" / "hami.yaml").read_text())
    assert yaml.safe_load(hami["values"]["device-config"]["content"])["nvidia"]["memoryFactor"] == 6


def test_a_key_without_effect_is_a_warning_and_the_plan_is_written(tmp_path):
    raw = raw_stack("dev")
    raw["gpushare:registryMirrors"] = {"quay.io": "mirror.example.com/quay"}  # dev runs no quay.io image
    stack_file = tmp_path / "Pulumi.dev.yaml"  # dev's policy config: its open endpoint stays advisory
    stack_file.write_text(yaml.safe_dump({"config": raw}))
    completed = run_plan(stack_file, tmp_path / "out")
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr.splitlines() == [
        "warning: gpushare:registryMirrors.quay.io: has no effect: no image this stack deploys comes from quay.io "
        "(they come from docker.io, nvcr.io, public.ecr.aws, registry.k8s.io)"
    ]
    assert (tmp_path / "out" / "dev" / "plan.json").exists()


@pytest.mark.parametrize(
    ("edit", "line"),
    [
        (
            lambda raw: raw.__setitem__("gpushar:teams", raw.pop("gpushare:teams")),
            "error: gpushar:teams: no one reads namespace 'gpushar', so the key would be dropped without a word; did "
            "you mean gpushare:teams?",
        ),
        (
            lambda raw: raw.__setitem__("karpenter", raw.pop("gpushare:karpenter")),
            "error: karpenter: not a configuration key: configuration keys should be of the form <namespace>:<name>; "
            "did you mean gpushare:karpenter?",
        ),
        (
            lambda raw: raw.__setitem__("gpushare:hami", {"secure": "v1:Zm9v:YmFy"}),
            "error: gpushare:hami: is a secret (secure:): gpushare keys hold no secrets",
        ),
        (
            lambda raw: raw["gpushare:cluster"]["endpoint"].__setitem__("publicAccessCidrs", ["203.0.113.7"]),
            "error: gpushare:cluster.endpoint.publicAccessCidrs[0]: '203.0.113.7' is an address, not a CIDR: write "
            "203.0.113.7/32",
        ),
    ],
    ids=["unknown namespace", "no namespace", "secret project value", "bare address"],
)
def test_a_stack_file_key_nobody_reads_exits_2_with_one_line_and_writes_nothing(tmp_path, edit, line):
    raw = raw_stack("dev")
    edit(raw)
    stack_file = tmp_path / "Pulumi.dev.yaml"
    stack_file.write_text(yaml.safe_dump({"config": raw}))
    completed = run_plan(stack_file, tmp_path / "out")
    assert completed.returncode == 2
    assert completed.stderr.startswith(line) and completed.stderr.count("\n") == 1, completed.stderr
    assert not (tmp_path / "out").exists()


def test_pulumis_own_stack_file_fields_and_legacy_keys_plan_the_same_stack(plans, tmp_path):
    """secretsprovider, encryptedkey, a secure provider value, Pulumi's and the providers' own keys, and keys in
    the legacy `<namespace>:config:<name>` form: the engine reads all of them, and so does the plan, to the same
    files."""
    raw = {key.replace(":", ":config:", 1): value for key, value in raw_stack("dev").items()}
    raw |= {
        "aws:profile": "gpu-admin",
        "aws:secretKey": {"secure": "v1:Zm9vYmFy:YmF6"},
        "kubernetes:suppressHelmHookWarnings": True,
        "pulumi:autonaming": {"pattern": "${name}"},
    }
    document = {
        "secretsprovider": "awskms://alias/gpushare",
        "encryptedkey": "AQICAHh0ZXN0a2V5",
        "config": raw,
    }
    stack_file = tmp_path / "Pulumi.dev.yaml"
    stack_file.write_text(yaml.safe_dump(document))
    completed = run_plan(stack_file, tmp_path / "out")
    assert completed.returncode == 0, completed.stderr
    first = plans["dev"]["_folder"]
    for path in sorted(first.rglob("*")):
        if path.is_file():
            assert (tmp_path / "out" / "dev" / path.relative_to(first)).read_bytes() == path.read_bytes(), path.name
