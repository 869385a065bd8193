"""The offline cluster: real upstream binaries, built from the pinned Go modules under `tools/` (`build`), run on
loopback inside a private network namespace (`rig`, `start`), with the stack's offline plan applied as the rig
runs it (`stack`) and HAMi's scheduler started as Helm renders or installs its chart (`helm`, `hami_installed`;
what the stack's own values say HAMi manages: `hami_values`). Stand-ins play only what needs hardware: a kubelet
and HAMi's device plugin per GPU node (`node_agent`, `tools/hami/gpunode`) and the NVIDIA device plugin
(`device_plugins`). The suites and the simulator stand on it through `workloads.Context`; nothing here imports them.
"""
