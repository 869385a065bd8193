"""make try's manifest reader: every class of bad input is one line naming file and document, before any cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e.tryout.manifests import asks_gpu, quantity, read_manifests
from gpushare.errors import UserError
from tests.conftest import ROOT

GPU_POD = """apiVersion: v1
kind: Pod
metadata: {name: NAME}
spec:
  containers:
  - name: main
    image: busybox
    resources: {limits: {nvidia.com/gpu: 1}}
"""


def _deployment(name: str, **change: str) -> str:
    values = {"api": "apps/v1", "labels": "app: x", "restart": "Always", "limits": "nvidia.com/gpu: 1"} | change
    return f"""apiVersion: {values["api"]}
kind: Deployment
metadata: {{name: {name}}}
spec:
  selector: {{matchLabels: {{app: x}}}}
  template:
    metadata: {{labels: {{{values["labels"]}}}}}
    spec:
      restartPolicy: {values["restart"]}
      containers:
      - name: main
        image: busybox
        resources: {{limits: {{{values["limits"]}}}}}
"""


def _problems(tmp_path: Path, files: dict[str, str]) -> list[str]:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(UserError) as caught:
        read_manifests(tmp_path, "ml-research")
    return str(caught.value).replace(f"{tmp_path}/", "").splitlines()


def test_the_shipped_examples_read_as_a_dozen_workloads_with_the_skipped_named():
    manifests = read_manifests(ROOT / "examples" / "try", "ml-research")
    assert len(manifests.workloads) == 12
    assert {w.kind for w in manifests.workloads} == {"Deployment", "Job", "CronJob", "StatefulSet", "Pod"}
    assert all(w.obj["metadata"]["namespace"] == "ml-research" for w in manifests.workloads)
    assert sorted((s.kind, s.why) for s in manifests.skipped) == [
        ("Deployment", "asks no GPU"),
        ("Service", "a Service is not a workload make try judges"),
    ]


def test_a_file_that_is_not_yaml_names_file_line_and_column(tmp_path):
    assert _problems(tmp_path, {"bad.yaml": "kind: Pod\n  metadata: [x\n"}) == [
        "bad.yaml: not YAML: YAML syntax error at line 2 col 11: mapping values are not allowed in this context"
    ]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("- a\n- b\n", "is not a Kubernetes object (a list)"),
        ("just text\n", "is not a Kubernetes object (a str)"),
        ("kind: Pod\nmetadata: {name: x}\n", "is not a Kubernetes object (no apiVersion)"),
        ("apiVersion: v1\nkind: Pod\n", "is not a Kubernetes object (no metadata.name)"),
        ("apiVersion: v1\nkind: List\nitems: []\n", "is a List: write each of its items as a document of its own"),
    ],
)
def test_a_document_that_is_no_kubernetes_object_is_named_by_its_number(tmp_path, text, problem):
    assert _problems(tmp_path, {"a.yaml": GPU_POD.replace("NAME", "ok") + "---\n" + text}) == [
        f"a.yaml: document 2: {problem}"
    ]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (_deployment("web", api="extensions/v1beta1"), "apiVersion: 'extensions/v1beta1'; the API server serves "
         "Deployment as apps/v1"),
        (_deployment("Web"), "metadata.name: 'Web' must be lower-case letters, digits, '-' and '.', starting and "
         "ending with a letter or digit, 63 characters at most"),
        (_deployment("web", labels="app: y"), "spec.selector: does not match the template's labels "
         "(spec.template.metadata.labels)"),
        (_deployment("web", restart="Never"), "spec.template.spec.restartPolicy: 'Never'; a Deployment's pods must "
         "restart Always"),
        (_deployment("web", limits="nvidia.com/gpu: 0.5"), "spec.template.spec.containers[0].resources."
         "limits[nvidia.com/gpu]: 0.5 must be a whole number (extended resource)"),
        (_deployment("web", limits="cpu: lots"), "spec.template.spec.containers[0].resources.limits[cpu]: 'lots' is "
         "not a quantity (e.g. 500m, 2, 16Gi)"),
        (GPU_POD.replace("NAME", "p").replace("    image: busybox\n", ""), "spec.containers[0].image: missing; the API "
         "server refuses a container without an image"),
        (GPU_POD.replace("NAME", "p").replace("{limits: {nvidia.com/gpu: 1}}", "{requests: {nvidia.com/gpu: 1}}"),
         "spec.containers[0].resources.limits[nvidia.com/gpu]: missing; an extended resource requested must be "
         "limited too"),
        (GPU_POD.replace("NAME", "p").replace("{limits: {nvidia.com/gpu: 1}}",
         "{requests: {nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 2}}"),
         "spec.containers[0].resources.requests[nvidia.com/gpu]: must equal its limit (no overcommit)"),
        ("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  template:\n    spec:\n      containers:\n"
         "      - {name: m, image: b, resources: {limits: {nvidia.com/gpu: 1}}}\n",
         "spec.template.spec.restartPolicy: None; a Job's pods need Never or OnFailure"),
        ("apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\nspec:\n  jobTemplate: {}\n",
         "spec.schedule: missing; a CronJob needs a cron schedule"),
    ],
)  # fmt: skip
def test_a_workload_the_api_server_would_refuse_is_named_with_its_field(tmp_path, text, problem):
    lines = _problems(tmp_path, {"w.yaml": text})
    assert all(line.startswith("w.yaml: document 1 (") for line in lines), lines
    assert any(line.endswith(f"): {problem}") for line in lines), lines


def test_every_problem_of_every_file_is_told_at_once(tmp_path):
    lines = _problems(
        tmp_path,
        {"a.yaml": "{", "b.yaml": "- x\n", "c.yaml": _deployment("web", restart="Never", limits="cpu: lots")},
    )
    assert [line.split(":")[0] for line in lines] == ["a.yaml", "b.yaml", "c.yaml", "c.yaml"]


def test_same_named_workloads_are_each_kept_and_told_apart(tmp_path):
    (tmp_path / "a.yaml").write_text(_deployment("web"))
    (tmp_path / "b.yaml").write_text(
        _deployment("web").replace("metadata: {name: web}", "metadata: {name: web, namespace: default}")
    )
    (tmp_path / "c.yaml").write_text(GPU_POD.replace("NAME", "web"))
    manifests = read_manifests(tmp_path, "ml-research")
    assert [(w.source.split("/")[-1], w.kind, w.written_name, w.name) for w in manifests.workloads] == [
        ("a.yaml#1", "Deployment", "web", "web"),
        ("b.yaml#1", "Deployment", "web", "web-2"),
        ("c.yaml#1", "Pod", "web", "web"),
    ]
    assert manifests.workloads[1].written_namespace == "default"
    assert manifests.workloads[1].obj["metadata"] == {"name": "web-2", "namespace": "ml-research"}
    assert manifests.workloads[0].obj["spec"] == manifests.workloads[1].obj["spec"], "applied unchanged otherwise"


def test_nothing_to_judge_is_bad_input(tmp_path):
    (tmp_path / "svc.yaml").write_text("apiVersion: v1\nkind: Service\nmetadata: {name: s}\n")
    with pytest.raises(UserError, match="holds no workload asking a GPU"):
        read_manifests(tmp_path, "ml-research")


def test_quantities_and_gpu_asks_read_as_kubernetes_does():
    assert [quantity(v) for v in ("500m", "2", "16Gi", "1e3", 1, "1.5")] == [0.5, 2, 16 * 2**30, 1000, 1, 1.5]
    assert quantity("lots") is None and quantity(True) is None
    assert asks_gpu({"spec": {"initContainers": [{"resources": {"limits": {"nvidia.com/gpu.shared": 1}}}]}})
    assert not asks_gpu({"spec": {"containers": [{"resources": {"limits": {"cpu": 1}}}]}})
