// Command rig-gpu-node plays, for one fake HAMi GPU node of the offline cluster, the parts a GPU node has that
// need hardware or a kubelet, so that HAMi's real scheduler and the real HAMi mock device plugin can run:
//
//   - a kubelet stand-in: the device-plugin Registration service on <plugin-dir>/kubelet.sock; for every plugin
//     that registers it calls ListAndWatch and writes the number of healthy devices into the Node's capacity
//     and allocatable, and it calls Allocate, as a kubelet admitting a pod does, for each pod bound to the node
//     that requests the plugin's resource;
//   - a stand-in for HAMi's NVIDIA device plugin, which needs NVML: it writes hami.io/node-nvidia-register with
//     HAMi's own types and encoder, registers GPUs x deviceSplitCount devices of the release's resource, and its
//     Allocate does HAMi's bookkeeping for the pod HAMi's scheduler bound (HAMi's own functions: the device
//     annotations, bind phase success, node lock released);
//   - the real mock device plugin, started as a child once the node has the resource, which registers
//     gpumem, gpucores and gpumem-percentage through the kubelet stand-in.
//
// HAMi v2.10's scheduler writes hami.io/node-handshake: Requesting_<time> on every node it reads
// (pkg/device/devices.go CheckHealth); its NVIDIA device plugin never answers it, and the scheduler keeps the node
// while its allocatable nvidia.com/gpu is above 0 (pkg/device/nvidia/device.go CheckHealth), which the kubelet
// stand-in keeps, as HAMi's own plugin does: nothing here writes the handshake either.
//
// The rig starts one per node in a private mount namespace, so <plugin-dir> is the node's own. It exits when
// its Node is deleted or on SIGTERM, and stops the mock with it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"gopkg.in/yaml.v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/Project-HAMi/HAMi/pkg/device/nvidia"
	"github.com/Project-HAMi/HAMi/pkg/util"
	"github.com/Project-HAMi/HAMi/pkg/util/client"
)

type options struct {
	node             string
	kubeconfig       string
	pluginDir        string
	deviceConfig     string
	gpus             int
	gpuMemoryMiB     int
	gpuName          string
	mock             string
	mockDeviceConfig string
}

func parseFlags() options {
	var o options
	flag.StringVar(&o.node, "node", "", "the Node this process plays the GPU side of (required)")
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the rig's API server (required)")
	flag.StringVar(&o.pluginDir, "plugin-dir", "/var/lib/kubelet/device-plugins", "the kubelet's device-plugin directory")
	flag.StringVar(&o.deviceConfig, "device-config", "", "HAMi device config (the chart's device-config.yaml; required)")
	flag.IntVar(&o.gpus, "gpus", 0, "physical GPUs of the node (required)")
	flag.IntVar(&o.gpuMemoryMiB, "gpu-memory-mib", 0, "memory of one GPU as NVML reports it, MiB (required)")
	flag.StringVar(&o.gpuName, "gpu-name", "", "NVML product name of the GPUs, e.g. \"NVIDIA A10G\" (required)")
	flag.StringVar(&o.mock, "mock", "", "the HAMi mock device plugin binary to run once the node has GPUs (optional)")
	flag.StringVar(&o.mockDeviceConfig, "mock-device-config", "", "device config file for the mock (default --device-config)")
	klog.InitFlags(nil)
	flag.Parse()
	if o.node == "" || o.kubeconfig == "" || o.deviceConfig == "" || o.gpus < 1 || o.gpuMemoryMiB < 1 || o.gpuName == "" {
		flag.Usage()
		os.Exit(2)
	}
	if o.mockDeviceConfig == "" {
		o.mockDeviceConfig = o.deviceConfig
	}
	return o
}

// readNvidiaConfig reads the `nvidia:` section with HAMi's own config type.
func readNvidiaConfig(path string) (nvidia.NvidiaConfig, error) {
	var file struct {
		Nvidia nvidia.NvidiaConfig `yaml:"nvidia"`
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return file.Nvidia, err
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		return file.Nvidia, fmt.Errorf("%s: %w", path, err)
	}
	if file.Nvidia.ResourceCountName == "" || file.Nvidia.DeviceSplitCount == nil {
		return file.Nvidia, fmt.Errorf("%s: nvidia.resourceCountName and nvidia.deviceSplitCount are required", path)
	}
	return file.Nvidia, nil
}

func main() {
	o := parseFlags()
	config, err := readNvidiaConfig(o.deviceConfig)
	if err != nil {
		klog.Fatalf("device config: %v", err)
	}
	// HAMi's util functions use its global client, built from KUBECONFIG, and read NODE_NAME.
	os.Setenv("KUBECONFIG", o.kubeconfig)
	os.Setenv(util.NodeNameEnvName, o.node)
	client.InitGlobalClient()
	// As HAMi's device plugin does at start: registers the NVIDIA device's pod annotation keys.
	nvidia.InitNvidiaDevice(config)
	kube := client.GetClient()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	kubelet := newKubelet(kube, o.node, o.pluginDir)
	if err := kubelet.serve(); err != nil {
		klog.Fatalf("kubelet stand-in: %v", err)
	}
	defer kubelet.close()

	plugin := newHamiPlugin(o, config)
	if err := plugin.annotate(ctx); err != nil {
		klog.Fatalf("writing %s: %v", nvidia.RegisterAnnos, err)
	}
	if err := plugin.serve(o.pluginDir); err != nil {
		klog.Fatalf("HAMi device plugin stand-in: %v", err)
	}
	defer plugin.close()
	if err := plugin.register(ctx, filepath.Join(o.pluginDir, kubeletSocket)); err != nil {
		klog.Fatalf("registering %s: %v", config.ResourceCountName, err)
	}

	var mock *exec.Cmd
	if o.mock != "" {
		if mock, err = startMockOnceRegistered(ctx, kube, o, config.ResourceCountName); err != nil {
			klog.Fatalf("mock device plugin: %v", err)
		}
	}
	go kubelet.admitPods(ctx)
	waitNodeGone(ctx, kube, o.node)
	if mock != nil {
		stopMock(mock)
	}
}

// stopMock ends the mock: the device-plugin manager it runs on catches SIGTERM and keeps polling its (gone)
// node, so it is killed when it has not exited a few seconds later.
func stopMock(mock *exec.Cmd) {
	exited := make(chan struct{})
	go func() {
		_ = mock.Wait()
		close(exited)
	}()
	_ = mock.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = mock.Process.Kill()
		<-exited
	}
}

// startMockOnceRegistered starts the mock when the node's allocatable `resource` is above 0: before that it
// registers nothing (it checks the same count) and would only poll again 30 s later.
func startMockOnceRegistered(ctx context.Context, kube kubernetes.Interface, o options, resource string) (*exec.Cmd, error) {
	for {
		node, err := kube.CoreV1().Nodes().Get(ctx, o.node, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if quantity, ok := node.Status.Allocatable[corev1ResourceName(resource)]; ok && quantity.Value() > 0 {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	mock := exec.Command(o.mock, "-v=5", "--device-config-file="+o.mockDeviceConfig)
	mock.Env = append(os.Environ(), "NODE_NAME="+o.node, "KUBECONFIG="+o.kubeconfig)
	mock.Stdout, mock.Stderr = os.Stderr, os.Stderr
	if err := mock.Start(); err != nil {
		return nil, err
	}
	klog.Infof("started the mock device plugin (pid %d)", mock.Process.Pid)
	return mock, nil
}

// waitNodeGone returns when the Node is deleted (Karpenter consolidated it) or the context ends.
func waitNodeGone(ctx context.Context, kube kubernetes.Interface, node string) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		_, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			klog.Infof("node %s deleted; stopping", node)
			return
		}
	}
}
