"""What happened to each workload `make try` placed: the document (try.json), its Markdown (try.md) and the terminal
table, built from what the run saw and the cluster's end state (pure: no cluster here)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from e2e.cluster.invariants import allocations, registered_gpus
from e2e.cluster.stack import rig_nodepool_name
from e2e.tryout.manifests import Manifests, Workload, pod_template
from e2e.tryout.reasons import TeamView, Verdict, asks_of, messages_about, pending, refused
from e2e.tryout.run import Seen, expected_pods, owner_chain, placed, workload_of
from gpushare import names
from gpushare.catalog import Catalog

INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
POD_NAME = re.compile(r'pods "[^"]*"')


def hami_allocation(pod: dict[str, Any], indexes: dict[str, int]) -> list[dict[str, Any]]:
    """What HAMi allocated: per device the GPU's index on the node, its type, memory and cores."""
    return [
        {"gpu_index": indexes.get(d.uuid), "uuid": d.uuid, "type": d.type, "memory": d.memory, "cores": d.cores}
        for d in allocations(pod)
    ]


def _verdict(verdict: Verdict) -> dict[str, str]:
    return {"class": verdict.kind, "reason": verdict.reason, "change": verdict.change}


def _pod_entry(
    pod: dict[str, Any],
    nodes: dict[str, dict[str, Any]],
    claims: dict[str, str],
    events: list[dict[str, Any]],
    team: TeamView,
    seen: Seen,
) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": pod["metadata"]["name"]}
    if placed(pod):
        node = nodes.get(pod["spec"]["nodeName"], {"metadata": {"labels": {}, "annotations": {}}})
        labels = node["metadata"].get("labels", {})
        entry |= {
            "state": "done" if pod["status"]["phase"] == "Succeeded" else "running",
            "pool": labels.get(names.POOL_LABEL, ""),
            "node_type": labels.get(INSTANCE_TYPE_LABEL, ""),
            "nodeclaim": claims.get(pod["spec"]["nodeName"], ""),
            "node": pod["spec"]["nodeName"],
            "hami": hami_allocation(pod, {gpu.uuid: gpu.index for gpu in registered_gpus(node)}),
            "seconds_to_placed": round(seen.placed_at.get(pod["metadata"]["uid"], 0.0), 1),
        }
        return entry
    said = messages_about(pod, events)
    return entry | {"state": "pending", **_verdict(pending(said, asks_of(pod), team)), "said": said[-1:]}


def _refusals(
    workload: Workload, objects: dict[str, list[dict[str, Any]]], chain: dict[str, tuple[str, str]]
) -> list[tuple[str, int]]:
    """The API server's messages refusing the workload's pods (its controller's FailedCreate events), each cause
    once (the first message verbatim; the same refusal of another pod name is the same cause) with how often."""
    found: dict[str, tuple[str, int]] = {}
    for event in objects["Event"]:
        involved = event.get("involvedObject", {})
        if event.get("reason") != "FailedCreate":
            continue
        owner = chain.get(involved.get("uid", ""), (involved.get("kind"), involved.get("name")))
        if owner == (workload.kind, workload.name):
            message = str(event.get("message", "")).removeprefix("(combined from similar events): ")
            message = message.removeprefix("Error creating: ")
            cause = POD_NAME.sub('pods "<pod>"', message)
            first, count = found.get(cause, (message, 0))
            found[cause] = (first, count + int(event.get("count") or 1))
    return list(found.values())


def document(
    manifests: Manifests,
    seen: Seen,
    end: dict[str, list[dict[str, Any]]],
    team: TeamView,
    catalog: Catalog,
    identity: dict[str, Any],
) -> dict[str, Any]:
    """The report: per workload its admission and pods, the skipped objects, the nodes launched and their cost."""
    nodes = {**seen.finished_nodes, **{n["metadata"]["name"]: n for n in end["Node"]}}
    present = {pod["metadata"]["uid"] for pod in end["Pod"]}
    pods = [*end["Pod"], *(pod for uid, pod in seen.finished.items() if uid not in present)]
    claim_of_node = {c.get("status", {}).get("nodeName", ""): c["metadata"]["name"] for c in end["NodeClaim"]}
    claim_of_node |= {info["node"]: name for name, info in seen.claims.items() if info.get("node")}
    chain = owner_chain(end)
    workloads = []
    for workload in manifests.workloads:
        asks = asks_of(pod_template(workload.kind, workload.obj))
        entry: dict[str, Any] = {
            "source": workload.source,
            "kind": workload.kind,
            "name": workload.written_name,
            "applied_as": workload.name,
            "namespace_written": workload.written_namespace,
            "pods_asked": expected_pods(workload),
        }
        message = seen.admission.get(workload.source)
        if message is not None:
            entry |= {"admission": "refused", "message": message, **_verdict(refused(message, asks, team))}
            entry["pods"] = []
            workloads.append(entry)
            continue
        refusals = _refusals(workload, end, chain)
        entry["pods_refused"] = [{"message": m, "times": n, **_verdict(refused(m, asks, team))} for m, n in refusals]
        mine = [p for p in pods if workload_of(p, chain) == (workload.kind, workload.name)]
        entry["pods"] = [
            _pod_entry(pod, nodes, claim_of_node, end["Event"], team, seen)
            for pod in sorted(mine, key=lambda p: p["metadata"]["name"])
        ]
        placed_pods = sum(pod["state"] in ("running", "done") for pod in entry["pods"])
        entry["admission"] = "admitted" if not refusals else "pods refused" if not placed_pods else "some pods refused"
        workloads.append(entry)
    pool_of = {rig_nodepool_name(pool.name): pool.name for pool in team.pools}
    up = {c["metadata"]["name"] for c in end["NodeClaim"] if not c["metadata"].get("deletionTimestamp")}
    launched = [
        {
            "nodeclaim": name,
            "type": info["type"],
            "pool": pool_of.get(info["nodepool"], info["nodepool"]),
            "usd_per_hour": catalog.instance_type(info["type"]).on_demand_usd_per_hour if info["type"] else 0.0,
            "up_at_end": name in up,
        }
        for name, info in sorted(seen.claims.items())
    ]
    at_end = Counter(node["type"] for node in launched if node["up_at_end"])
    return {
        **identity,
        "team": team.name,
        "settled": seen.settled,
        "seconds_placing": round(seen.seconds, 1),
        "workloads": workloads,
        "skipped": [{"source": s.source, "kind": s.kind, "name": s.name, "why": s.why} for s in manifests.skipped],
        "nodes": launched,
        "nodes_at_end": dict(sorted(at_end.items())),
        "usd_per_hour_at_end": round(sum(n["usd_per_hour"] for n in launched if n["up_at_end"]), 3),
    }


def _placed_count(entry: dict[str, Any]) -> int:
    return sum(pod["state"] in ("running", "done") for pod in entry["pods"])


def _where(entry: dict[str, Any]) -> str:
    """The pools and node types its placed pods run on, with counts."""
    seen = Counter(f"{p['pool']} {p['node_type']}" for p in entry["pods"] if p["state"] in ("running", "done"))
    return ", ".join(f"{n} x {where}" if n > 1 else where for where, n in sorted(seen.items()))


def _gpu_text(pod: dict[str, Any]) -> str:
    if not pod.get("hami"):
        return "time-sliced replica" if pod.get("pool") else ""
    return "; ".join(f"GPU {d['gpu_index']} {d['type']} {d['memory']} MiB {d['cores']}% cores" for d in pod["hami"])


def _problems(entry: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(what, why, change) lines for the workload: its refusal, its pods' refusals and every distinct pending
    reason."""
    if entry["admission"] == "refused":
        return [("refused", entry["reason"], entry["change"])]
    lines = [(f"pods refused ({r['times']} times)", r["reason"], r["change"]) for r in entry.get("pods_refused", [])]
    reasons = Counter((p["reason"], p["change"]) for p in entry["pods"] if p["state"] == "pending")
    lines += [(f"{n} pending", reason, change) for (reason, change), n in reasons.items()]
    return lines


def terminal(doc: dict[str, Any]) -> str:
    rows = [("workload", "kind/name", "admission", "placed", "where", "to placed")]
    for entry in doc["workloads"]:
        times = [p["seconds_to_placed"] for p in entry["pods"] if p["state"] in ("running", "done")]
        rows.append(
            (
                entry["source"],
                f"{entry['kind']}/{entry['applied_as']}",
                entry["admission"],
                f"{_placed_count(entry)}/{entry['pods_asked']}",
                _where(entry) or "-",
                f"{max(times):.0f} s" if times else "-",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    for entry in doc["workloads"]:
        for what, why, change in _problems(entry):
            lines.append(
                f"{entry['source']} {entry['applied_as']}: {what}: {why}" + (f" -> {change}" if change else "")
            )
    lines += [f"skipped {s['source']} {s['kind']}/{s['name']}: {s['why']}" for s in doc["skipped"]]
    nodes = ", ".join(f"{n} x {t}" for t, n in doc["nodes_at_end"].items()) or "none"
    lines.append(
        f"nodes up at the end: {nodes}, ${doc['usd_per_hour_at_end']}/h on demand; {len(doc['nodes'])} NodeClaims "
        f"launched in all; cluster start {doc['seconds_startup']:.0f} s, placing {doc['seconds_placing']:.0f} s"
    )
    return "\n".join(lines)


def _notes(entry: dict[str, Any], team: str) -> list[str]:
    """The workload's bullet points: its renaming and namespace, its refusal or its pods' refusals."""
    notes = []
    if entry["applied_as"] != entry["name"]:
        notes.append(f"- Renamed from `{entry['name']}`: an earlier document holds a {entry['kind']} of that name.")
    if entry["namespace_written"] and entry["namespace_written"] != team:
        notes.append(f"- Its namespace `{entry['namespace_written']}` was replaced by `{team}`.")
    if entry["admission"] == "refused":
        notes += [
            f"- **Refused** at admission: `{entry['message']}`",
            f"- Why: {entry['reason']}. Change: {entry['change']}.",
        ]
    for refusal in entry.get("pods_refused", []):
        notes += [
            f"- Pods **refused** ({refusal['times']} times): `{refusal['message']}`",
            f"  - Why: {refusal['reason']}. Change: {refusal['change']}.",
        ]
    if not notes and not entry["pods"]:
        notes.append("- No pod was created.")
    return notes


def markdown(doc: dict[str, Any]) -> str:
    lines = [
        f"# make try: {doc['manifests']} as team {doc['team']} on the {doc['stack']} stack",
        "",
        f"Commit {doc['commit']}. Cluster start {doc['seconds_startup']:.0f} s, placing {doc['seconds_placing']:.0f} s"
        + ("" if doc["settled"] else " (not settled: the run's time ran out)")
        + ". Every workload was applied into namespace "
        f"`{doc['team']}` unchanged but for the namespace (and a repeated name, below).",
        "",
        "| workload | kind/name | admission | pods placed | where | slowest to placed |",
        "|---|---|---|---|---|---|",
    ]
    for entry in doc["workloads"]:
        times = [p["seconds_to_placed"] for p in entry["pods"] if p["state"] in ("running", "done")]
        lines.append(
            f"| `{entry['source']}` | {entry['kind']}/{entry['applied_as']} | {entry['admission']} | "
            f"{_placed_count(entry)}/{entry['pods_asked']} | {_where(entry) or '-'} | "
            f"{f'{max(times):.0f} s' if times else '-'} |"
        )
    for entry in doc["workloads"]:
        lines += ["", f"## {entry['kind']} {entry['applied_as']} (`{entry['source']}`)"]
        notes = _notes(entry, doc["team"])
        lines += ["", *notes] if notes else []
        if entry["pods"]:
            lines += [
                "",
                "| pod | state | pool | node type | NodeClaim | HAMi allocated | to placed |",
                "|---|---|---|---|---|---|---|",
            ]
            for pod in entry["pods"]:
                if pod["state"] == "pending":
                    lines.append(f"| {pod['name']} | pending | | | | {pod['reason']}; change: {pod['change']} | |")
                else:
                    lines.append(
                        f"| {pod['name']} | {pod['state']} | {pod['pool']} | {pod['node_type']} | {pod['nodeclaim']} | "
                        f"{_gpu_text(pod)} | {pod['seconds_to_placed']:.0f} s |"
                    )
    if doc["skipped"]:
        lines += ["", "## Skipped", ""]
        lines += [f"- `{s['source']}` {s['kind']}/{s['name']}: {s['why']}" for s in doc["skipped"]]
    lines += [
        "",
        "## Nodes",
        "",
        "| NodeClaim | type | pool | $/h on demand | up at the end |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {n['nodeclaim']} | {n['type']} | {n['pool']} | {n['usd_per_hour']} | {'yes' if n['up_at_end'] else 'no'} |"
        for n in doc["nodes"]
    ]
    lines += ["", f"Up at the end: ${doc['usd_per_hour_at_end']}/h on demand."]
    return "\n".join(lines) + "\n"
