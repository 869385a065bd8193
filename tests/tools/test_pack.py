"""`make pack` as a user meets it: the figures per pool, the shipped mixes, determinism, and bad input."""

from __future__ import annotations

import json

import yaml

from tests.conftest import ROOT
from tools import pack

MIXES = ROOT / "examples" / "workloads"


def test_the_production_mix_packs_cheaper_than_first_fit(tmp_path, capsys):
    """CPU decides the type: first-fit opens nodes by GPU fit and pays for it; the optimum is proven."""
    assert pack.main(["--workload", str(MIXES / "production-mix.yaml"), "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "pack.json").read_text())
    g5 = result["pools"]["g5-shared"]
    assert g5["status"] == "optimal" and g5["gap_percent"] == 0
    assert g5["usd_per_hour"] < g5["first_fit_usd_per_hour"] < g5["one_pod_per_whole_gpu_usd_per_hour"]
    assert result["total"]["usd_per_hour"] < result["total"]["first_fit_usd_per_hour"]
    out = capsys.readouterr().out
    assert f"pool g5-shared: 50 pods on {', '.join(f'{n} x {t}' for t, n in g5['nodes_by_type'].items())}" in out
    assert f"first-fit: ${g5['first_fit_usd_per_hour']}/h" in out


def test_every_shipped_mix_packs_at_most_first_fit_and_within_the_limit(tmp_path):
    for path in sorted(MIXES.glob("*-mix.yaml")):
        assert pack.main(["--workload", str(path), "--out", str(tmp_path)]) == 0, path.name
        result = json.loads((tmp_path / "pack.json").read_text())
        for name, pool in result["pools"].items():
            assert pool["lower_bound_usd_per_hour"] <= pool["usd_per_hour"] <= pool["first_fit_usd_per_hour"], name
            assert pool["limit"]["used"] <= pool["limit"]["allowed"], name
            assert pool["gpu_memory_mib"]["used"] <= pool["gpu_memory_mib"]["paid"], name


def _without_seconds(path):
    pools = json.loads(path.read_text())["pools"]
    return {name: {key: value for key, value in pool.items() if key != "seconds"} for name, pool in pools.items()}


def test_same_mix_same_figures(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    for out in (first, second):
        assert pack.main(["--workload", str(MIXES / "production-mix.yaml"), "--out", str(out)]) == 0
    assert _without_seconds(first / "pack.json") == _without_seconds(second / "pack.json")


def test_bad_mix_exits_2_one_line_per_problem_and_writes_nothing(tmp_path, capsys):
    mix = yaml.safe_load((MIXES / "inference-mix.yaml").read_text())
    mix["pods"][0]["count"] = 0
    mix["pods"][1]["pool"] = "nowhere"
    path = tmp_path / "bad-mix.yaml"
    path.write_text(yaml.safe_dump(mix))
    assert pack.main(["--workload", str(path), "--out", str(tmp_path / "out")]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2
    assert any("pods[0].count" in line for line in lines) and any("pods[1].pool" in line for line in lines)
    assert not (tmp_path / "out").exists()


def test_another_stacks_pools_and_a_limit_no_packing_fits(tmp_path, capsys):
    """The same pods on dev, where team inference has other pools: every group named; a mix beyond a pool's
    NodePool limit says so instead of packing past it."""
    assert pack.main(["--workload", str(MIXES / "inference-mix.yaml"), "--stack", "dev", "--out", str(tmp_path)]) == 2
    assert len(capsys.readouterr().err.splitlines()) == 4
    mix = yaml.safe_load((MIXES / "production-mix.yaml").read_text())
    mix["pods"][3]["count"] = 40  # 7 vCPUs: one per g6.2xlarge, two per g6.4xlarge; 16 GPUs hold 32
    path = tmp_path / "over-limit-mix.yaml"
    path.write_text(yaml.safe_dump(mix))
    assert pack.main(["--workload", str(path), "--out", str(tmp_path / "out")]) == 2
    assert (
        "pool g6-shared: 52 pods, no packing exists within the pool's NodePool limit of 160" in capsys.readouterr().err
    )


def test_a_trace_is_refused_in_one_line_naming_its_keys(tmp_path, capsys):
    assert pack.main(["--workload", str(MIXES / "inference-day.yaml"), "--out", str(tmp_path)]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert "deployments" in line and "make pack takes a fixed mix" in line
    assert not (tmp_path / "pack.json").exists()


DAY = MIXES / "production-day.csv"
DAY_MAPPING = MIXES / "production-day.mapping.yaml"


def test_a_replayed_pod_lists_moment_packs_the_pods_alive_then(tmp_path, capsys):
    """Two pods of the shipped list's shape, one alive at 10:00 and one from 12:00: each moment packs what is
    alive then, on the mapping's stack, checked by the same rules as a mix."""
    pods = tmp_path / "pods.csv"
    pods.write_text(
        DAY.read_text().splitlines()[0]
        + "\ninference,chat-a,2026-11-18T09:00:00Z,2026-11-18T11:00:00Z,2,8Gi,1,0.25,,"
        + "\ninference,rerank-b,2026-11-18T12:00:00Z,,4,16Gi,1,,8192,40\n"
    )
    for at, pools in (("10:00", {"g6-shared": 1}), ("12:30", {"g5-shared": 1}), ("11:30", {})):
        assert (
            pack.main(["--workload", str(pods), "--mapping", str(DAY_MAPPING), "--at", at, "--out", str(tmp_path)]) == 0
        )
        result = json.loads((tmp_path / "pack.json").read_text())
        assert {name: pool["pods"] for name, pool in result["pools"].items()} == pools, at
        assert result["moment"]["at"] == at and result["stack"] == "prod"
    assert "no pods to pack" in capsys.readouterr().out
    assert (
        pack.main(["--workload", str(DAY), "--mapping", str(DAY_MAPPING), "--at", "14:00", "--out", str(tmp_path)]) == 0
    )
    result = json.loads((tmp_path / "pack.json").read_text())
    assert set(result["pools"]) == {"g5-shared", "g6-shared"}
    assert all(pool["usd_per_hour"] <= pool["first_fit_usd_per_hour"] for pool in result["pools"].values())


def test_a_bad_moment_lists_every_problem_of_the_list_and_the_time_and_writes_nothing(tmp_path, capsys):
    pods = tmp_path / "pods.csv"
    pods.write_text(DAY.read_text().splitlines()[0] + "\ninference,chat-a,yesterday,,2,8Gi,1,0.25,,\n")
    out = tmp_path / "out"
    assert pack.main(["--workload", str(pods), "--mapping", str(DAY_MAPPING), "--at", "24:00", "--out", str(out)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2
    assert f"{pods}:2: created" in lines[0]
    assert lines[1] == "error: --at: '24:00' is not a time of the replayed day; write HH:MM from 00:00 to 23:59"
    assert pack.main(["--workload", str(DAY), "--at", "10:00", "--out", str(out)]) == 2
    assert pack.main(["--workload", str(DAY), "--mapping", str(DAY_MAPPING), "--out", str(out)]) == 2
    assert pack.main(["--workload", str(DAY), "--mapping", str(DAY_MAPPING), "--at", "10:00", "--stack", "dev"]) == 2
    assert [line.split(":")[1] for line in capsys.readouterr().err.splitlines()] == [
        " --at",
        " --mapping",
        " --mapping",
    ]
    assert not out.exists()
