"""What `make plan` says it builds and costs (printed and in summary.json), the pool limits named apart, the build
folder after a refused plan, and `make help`."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import yaml

from gpushare import names
from gpushare.capacity import pool_plans, team_quota
from gpushare.costs import stack_cost
from gpushare.loader import load_stack_config
from tests.conftest import PLAN_DATE, ROOT, raw_stack, run_plan
from tools.summary import SUMMARY_FILE, resource_kinds, stack_summary, team_rows


def test_summary_json_holds_the_printed_figures(plans, prod):
    written = json.loads((plans["prod"]["_folder"] / SUMMARY_FILE).read_text())
    plan = {k: v for k, v in plans["prod"].items() if not k.startswith("_")}
    assert written == json.loads(json.dumps(stack_summary(prod, plan)))
    out = plans["prod"]["_stdout"]
    cost = stack_cost(prod, plan["resources"])
    assert f"{written['alwaysOn']['usdPerMonth']:,.2f}" in out
    assert f"{written['atLimits']['usdPerMonth']:,.2f}" in out
    assert written["atLimits"]["usdPerHour"] == round(cost.at_limits_usd_per_hour, 4)
    for pool in written["pools"]:
        assert re.search(rf"^{re.escape(pool['name'])}\s+\S+\s+{pool['maxGpus']}\s", out, re.MULTILINE), pool["name"]


def test_resources_by_kind_count_every_cloud_object_of_the_plan(plans):
    resources = plans["dev"]["resources"]
    kinds = resource_kinds(resources)
    clouds = sum(r["type"].split(":", 1)[0] in ("aws", "eks", "kubernetes") for r in resources)
    assert sum(kinds["aws"].values()) + sum(kinds["kubernetes"].values()) == clouds
    assert kinds["aws"]["ec2 NatGateway"] == sum(r["type"] == "aws:ec2/natGateway:NatGateway" for r in resources)
    assert kinds["kubernetes"]["karpenter.sh/v1 NodePool"] == len(raw_stack("dev")["gpushare:pools"])
    out = plans["dev"]["_stdout"]
    assert f"aws ({sum(kinds['aws'].values())}): " in out and "helm releases: hami, karpenter" in out


def test_teams_print_quotas_in_gib_and_gpus_beside_mib(plans, dev):
    out = plans["dev"]["_stdout"]
    factor = dev.hami.profile.memory_factor
    for team in dev.teams:
        quota = team_quota(dev, team)
        mib = quota[names.GPU_MEMORY] * factor
        gib = f"{mib / 1024:.2f}".rstrip("0").rstrip(".")
        assert f"{mib} MiB ({gib} GiB)" in out
        cores = quota[names.GPU_CORES]
        assert f"{cores}% ({cores / 100:g} GPUs)" in out
    stated = {team.name: team.quota.model_dump() for team in dev.teams}
    left_out = [f"{name}: {', '.join(k for k, v in keys.items() if v is None)}" for name, keys in stated.items()]
    expected = "; ".join(line for line in left_out if not line.endswith(": "))
    assert f"left out, so the most the team's pools can ever register: {expected}" in out


def test_a_quota_key_left_out_shows_what_the_quota_model_derives_for_it():
    raw = raw_stack("dev")
    raw["gpushare:teams"] = [
        {**team, "quota": {"gpus": team["quota"]["gpus"]}} if team["name"] == "inference" else team
        for team in raw["gpushare:teams"]
    ]
    config = load_stack_config(raw, today=PLAN_DATE)
    inference = next(row for row in team_rows(config) if row["name"] == "inference")
    derived = team_quota(config, next(team for team in config.teams if team.name == "inference"))
    assert inference["quota"]["leftOut"] == ["gpuMemoryMib", "gpuCores", "sharedGpus"]
    assert inference["quota"]["gpuCores"] == derived[names.GPU_CORES] > 0
    assert inference["quota"]["gpuMemoryMib"] == derived[names.GPU_MEMORY] * config.hami.profile.memory_factor > 0


def test_spot_pools_say_they_are_priced_on_demand(plans):
    prod_pools = {p["name"]: p for p in json.loads((plans["prod"]["_folder"] / SUMMARY_FILE).read_text())["pools"]}
    for pool in raw_stack("prod")["gpushare:pools"]:
        spot = "spot" in pool.get("capacityTypes", ["on-demand"])
        assert ("spot" in prod_pools[pool["name"]]["pricing"]) == spot, pool["name"]


def test_the_vcpu_quotas_are_printed_per_quota(plans):
    figures = json.loads((plans["prod"]["_folder"] / SUMMARY_FILE).read_text())
    out = plans["prod"]["_stdout"]
    assert {q["capacityType"] for q in figures["vcpuQuotas"]} == {"on-demand", "spot"}
    for quota in figures["vcpuQuotas"]:
        assert re.search(rf"{re.escape(quota['name'])}\s+{quota['code']}\s+\S+\s+{quota['vcpus']}\s", out)


def test_outputs_name_max_gpus_and_the_node_pool_limit_apart(plans, dev):
    """dev's g4dn-shared has maxGpus 4: the output said `gpuLimit: 40` (its vGPU limit) under a GPU name."""
    outputs = plans["dev"]["outputs"]["pools"]
    for pool in dev.pools:
        plan = pool_plans(dev)[pool.name]
        assert outputs[pool.name]["maxGpus"] == pool.max_gpus
        assert outputs[pool.name]["nodePoolLimit"] == {plan.limit_resource: plan.node_pool_limit}
        assert "gpuLimit" not in outputs[pool.name]
    hami = outputs["g4dn-shared"]["nodePoolLimit"][names.GPU]
    assert hami == 4 * dev.hami.profile.device_split_count != outputs["g4dn-shared"]["maxGpus"]
    out = plans["dev"]["_stdout"]
    assert f"g4dn-shared: maxGpus 4 physical GPUs = NodePool limit nvidia.com/gpu: {hami} (vGPUs" in out
    assert "nodes if alone" in out


def _stack_file(tmp_path, name, raw):
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": raw}))
    return path


def test_a_plan_refused_as_bad_input_leaves_no_earlier_plan_of_its_stack(tmp_path):
    out = tmp_path / "out"
    good = _stack_file(tmp_path, "team", raw_stack("prod"))
    assert run_plan(good, out).returncode == 0
    assert (out / "team" / "plan.json").exists()
    broken = raw_stack("prod")
    broken["gpushare:pools"][0]["maxGpus"] = 0
    refused = run_plan(_stack_file(tmp_path, "team", broken), out)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert not (out / "team").exists()
    check = subprocess.run(
        [sys.executable, "-m", "tools.check", "--plan", str(out / "team" / "plan.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 2


def test_a_plan_the_pack_refuses_replaces_the_earlier_one_and_check_refuses_it_too(tmp_path):
    """The dev settings under a stack with no policy config: the open endpoint is mandatory there (exit 1)."""
    out = tmp_path / "out"
    closed = raw_stack("dev")
    closed["gpushare:cluster"]["endpoint"]["publicAccessCidrs"] = ["203.0.113.0/24"]
    assert run_plan(_stack_file(tmp_path, "staging", closed), out).returncode == 0
    earlier = (out / "staging" / "plan.json").read_text()
    assert run_plan(_stack_file(tmp_path, "staging", raw_stack("dev")), out).returncode == 1
    assert (out / "staging" / "plan.json").read_text() != earlier
    check = subprocess.run(
        [sys.executable, "-m", "tools.check", "--plan", str(out / "staging" / "plan.json"), "--date", str(PLAN_DATE)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 1, check.stdout + check.stderr


def _make(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=ROOT, capture_output=True, text=True)


def test_make_help_lists_every_target_and_a_bare_make_prints_it():
    makefile = (ROOT / "Makefile").read_text()
    targets = re.findall(r"^([a-z][a-z0-9-]*):", makefile, re.MULTILINE)
    undocumented = [t for t in targets if not re.search(rf"^{t}:.*## \S", makefile, re.MULTILINE)]
    assert undocumented == []
    help_text = _make("help")
    assert help_text.returncode == 0
    listed = re.findall(r"^  make (\S+)", help_text.stdout, re.MULTILINE)
    assert listed == targets and "diff" in listed
    assert _make().stdout == help_text.stdout


def test_the_annotated_example_stack_plans(tmp_path):
    example = ROOT / "examples" / "stacks" / "Pulumi.three-teams.yaml"
    completed = run_plan(example, tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert "warning" not in completed.stderr
    config = load_stack_config(yaml.safe_load(example.read_text())["config"], today=PLAN_DATE)
    assert len(config.teams) == 3
