# The GPU pods of `kubectl get pods -A -o json` as make simulate's pod list (JSON lines, e2e/README.md "Replay a cluster's
# own day"): one line per pod asking nvidia.com/gpu or nvidia.com/gpu.shared, from its first such container.
#   kubectl get pods -A -o json | jq -c -f examples/workloads/pods-from-kubectl.jq > pods.jsonl
# A running pod has no deletion time (it lives to the replayed day's end); a finished one ends when its last
# container did. Pods already deleted are not in the API any more: export from Prometheus for a whole day.
def number: if . == null then null else tonumber end;
.items[]
| (.spec.containers
   | map(select(.resources.limits["nvidia.com/gpu"] != null or .resources.limits["nvidia.com/gpu.shared"] != null))
   | first) as $gpu
| select($gpu != null)
| {
    namespace: .metadata.namespace,
    name: .metadata.name,
    created: .metadata.creationTimestamp,
    deleted: (.metadata.deletionTimestamp
              // ([.status.containerStatuses[]?.state.terminated.finishedAt // empty] | max)),
    cpu: $gpu.resources.requests.cpu,
    memory: $gpu.resources.requests.memory,
    gpus: (($gpu.resources.limits["nvidia.com/gpu"] // $gpu.resources.limits["nvidia.com/gpu.shared"]) | number),
    gpuMemoryMib: ($gpu.resources.limits["nvidia.com/gpumem"] | number),
    gpuCores: ($gpu.resources.limits["nvidia.com/gpucores"] | number)
  }
| with_entries(select(.value != null))
