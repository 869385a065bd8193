// Builds HAMi's scheduler (extender, webhook, metrics) and the HAMi mock device plugin for the offline cluster
// (make e2e), and rig-gpu-node, the rig's kubelet and HAMi-device-plugin stand-in (./gpunode), which uses HAMi's
// own packages. The Go module proxy refuses both upstream modules here: e2e/build.py then builds against a copy
// of this file with a `replace` of each onto its sha256-checked source archive (GPUSHARE_UPSTREAM_SOURCES).
// HAMi v2.8.3 has no /v2 module path: it is required as its commit's pseudo-version. The k8s.io replace block
// is HAMi v2.8.3's own (its local-path replaces dropped).
module gpushare.local/e2e/tools/hami

go 1.26.0

require (
	github.com/HAMi/mock-device-plugin v1.0.1
	github.com/Project-HAMi/HAMi v0.0.0-20260519083325-8f039ad22bfc
	google.golang.org/grpc v1.78.0
	gopkg.in/yaml.v2 v2.4.0
	k8s.io/api v0.33.0
	k8s.io/apimachinery v0.33.0
	k8s.io/client-go v0.33.0
	k8s.io/klog/v2 v2.130.1
	k8s.io/kubelet v0.32.3
)

require (
	github.com/NVIDIA/go-nvlib v0.9.0 // indirect
	github.com/NVIDIA/go-nvml v0.13.0-1 // indirect
	github.com/NVIDIA/k8s-device-plugin v0.18.1 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/ccoveille/go-safecast v1.8.2 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/cpuguy83/go-md2man/v2 v2.0.7 // indirect
	github.com/davecgh/go-spew v1.1.2-0.20180830191138-d8f796af33cc // indirect
	github.com/emicklei/go-restful/v3 v3.11.3 // indirect
	github.com/fsnotify/fsnotify v1.9.0 // indirect
	github.com/fxamacker/cbor/v2 v2.7.0 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/go-openapi/jsonpointer v0.21.0 // indirect
	github.com/go-openapi/jsonreference v0.20.4 // indirect
	github.com/go-openapi/swag v0.23.0 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/golang/glog v1.2.5 // indirect
	github.com/golang/groupcache v0.0.0-20210331224755-41bb18bfe9da // indirect
	github.com/golang/protobuf v1.5.4 // indirect
	github.com/google/gnostic-models v0.6.9 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/google/gofuzz v1.2.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/imdario/mergo v0.3.16 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/josharian/intern v1.0.0 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/julienschmidt/httprouter v1.3.0 // indirect
	github.com/kubevirt/device-plugin-manager v1.18.8 // indirect
	github.com/mailru/easyjson v0.7.7 // indirect
	github.com/moby/sys/capability v0.4.0 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.2 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/opencontainers/runtime-spec v1.3.0 // indirect
	github.com/opencontainers/runtime-tools v0.9.1-0.20251114084447-edf4cb3d2116 // indirect
	github.com/prometheus/client_golang v1.23.2 // indirect
	github.com/prometheus/client_model v0.6.2 // indirect
	github.com/prometheus/common v0.66.1 // indirect
	github.com/prometheus/procfs v0.17.0 // indirect
	github.com/russross/blackfriday/v2 v2.1.0 // indirect
	github.com/spf13/cobra v1.10.2 // indirect
	github.com/spf13/pflag v1.0.10 // indirect
	github.com/urfave/cli/v2 v2.27.7 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	github.com/xrash/smetrics v0.0.0-20240521201337-686a1a2994c1 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	golang.org/x/mod v0.32.0 // indirect
	golang.org/x/net v0.49.0 // indirect
	golang.org/x/oauth2 v0.32.0 // indirect
	golang.org/x/sys v0.40.0 // indirect
	golang.org/x/term v0.39.0 // indirect
	golang.org/x/text v0.33.0 // indirect
	golang.org/x/time v0.9.0 // indirect
	gomodules.xyz/jsonpatch/v2 v2.4.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20251029180050-ab9386a59fda // indirect
	google.golang.org/protobuf v1.36.10 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
	k8s.io/kube-openapi v0.0.0-20250318190949-c8a335a9a2ff // indirect
	k8s.io/kube-scheduler v0.28.3 // indirect
	k8s.io/utils v0.0.0-20241104100929-3ea5e8cea738 // indirect
	sigs.k8s.io/controller-runtime v0.21.0 // indirect
	sigs.k8s.io/json v0.0.0-20241010143419-9aa6b5e7a4b3 // indirect
	sigs.k8s.io/randfill v1.0.0 // indirect
	sigs.k8s.io/structured-merge-diff/v4 v4.6.0 // indirect
	sigs.k8s.io/yaml v1.4.0 // indirect
	tags.cncf.io/container-device-interface v1.1.0 // indirect
	tags.cncf.io/container-device-interface/specs-go v1.1.0 // indirect
)

replace (
	k8s.io/api => k8s.io/api v0.31.10
	k8s.io/apiextensions-apiserver => k8s.io/apiextensions-apiserver v0.31.10
	k8s.io/apimachinery => k8s.io/apimachinery v0.31.10
	k8s.io/apiserver => k8s.io/apiserver v0.31.10
	k8s.io/cli-runtime => k8s.io/cli-runtime v0.31.10
	k8s.io/client-go => k8s.io/client-go v0.31.10
	k8s.io/cloud-provider => k8s.io/cloud-provider v0.31.10
	k8s.io/cluster-bootstrap => k8s.io/cluster-bootstrap v0.31.10
	k8s.io/code-generator => k8s.io/code-generator v0.31.10
	k8s.io/component-base => k8s.io/component-base v0.31.10
	k8s.io/component-helpers => k8s.io/component-helpers v0.31.10
	k8s.io/cri-api => k8s.io/cri-api v0.31.10
	k8s.io/csi-translation-lib => k8s.io/csi-translation-lib v0.31.10
	k8s.io/kube-aggregator => k8s.io/kube-aggregator v0.31.10
	k8s.io/kube-controller-manager => k8s.io/kube-controller-manager v0.31.10
	k8s.io/kube-proxy => k8s.io/kube-proxy v0.31.10
	k8s.io/kube-scheduler => k8s.io/kube-scheduler v0.31.10
	k8s.io/kubectl => k8s.io/kubectl v0.31.10
	k8s.io/kubelet => k8s.io/kubelet v0.31.10
	k8s.io/legacy-cloud-providers => k8s.io/legacy-cloud-providers v0.31.10
	k8s.io/metrics => k8s.io/metrics v0.31.10
	k8s.io/sample-apiserver => k8s.io/sample-apiserver v0.31.10
)
