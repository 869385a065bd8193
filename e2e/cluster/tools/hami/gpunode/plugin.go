package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/Project-HAMi/HAMi/pkg/device"
	"github.com/Project-HAMi/HAMi/pkg/device/nvidia"
	"github.com/Project-HAMi/HAMi/pkg/util"
	"github.com/Project-HAMi/HAMi/pkg/util/nodelock"
)

const pluginSocket = "hami-nvidia-stand-in.sock"

// hamiPlugin stands in for HAMi's NVIDIA device plugin (pkg/device-plugin/nvidiadevice/nvinternal/plugin),
// with the node's GPUs given by flags instead of read from NVML.
type hamiPlugin struct {
	pluginapi.UnimplementedDevicePluginServer
	node    string
	config  nvidia.NvidiaConfig
	gpus    []*device.DeviceInfo
	devices []*pluginapi.Device
	server  *grpc.Server
}

func newHamiPlugin(o options, config nvidia.NvidiaConfig) *hamiPlugin {
	p := &hamiPlugin{node: o.node, config: config}
	split := int(*config.DeviceSplitCount)
	memory := int32(o.gpuMemoryMiB)
	// register.go: memory scaled only when the scaling is not 1; cores always 100 x scaling; the NVML name gets
	// an "NVIDIA-" prefix unless it has "NVIDIA" already.
	if config.DeviceMemoryScaling != nil && *config.DeviceMemoryScaling != 1 {
		memory = int32(float64(memory) * *config.DeviceMemoryScaling)
	}
	cores := int32(100)
	if config.DeviceCoreScaling != nil {
		cores = int32(*config.DeviceCoreScaling * 100)
	}
	name := o.gpuName
	if len(name) < 6 || name[:6] != "NVIDIA" {
		name = "NVIDIA-" + name
	}
	for index := range o.gpus {
		uuid := fmt.Sprintf("GPU-%s-%d", o.node, index)
		p.gpus = append(p.gpus, &device.DeviceInfo{
			ID: uuid, Index: uint(index), Count: int32(split), Devmem: memory, Devcore: cores,
			Type: name, Numa: 0, Mode: "hami-core", Health: true,
		})
		for slot := range split {
			p.devices = append(p.devices, &pluginapi.Device{ID: fmt.Sprintf("%s::%d", uuid, slot), Health: pluginapi.Healthy})
		}
	}
	return p
}

// annotate writes hami.io/node-nvidia-register as RegisterInAnnotation does, with HAMi's encoder.
func (p *hamiPlugin) annotate(ctx context.Context) error {
	node, err := util.GetNode(p.node)
	if err != nil {
		return err
	}
	return util.PatchNodeAnnotations(node, map[string]string{nvidia.RegisterAnnos: device.MarshalNodeDevices(p.gpus)})
}

func (p *hamiPlugin) serve(dir string) error {
	server, err := serveUnix(filepath.Join(dir, pluginSocket), func(s *grpc.Server) {
		pluginapi.RegisterDevicePluginServer(s, p)
	})
	p.server = server
	return err
}

func (p *hamiPlugin) close() { p.server.Stop() }

// register announces the plugin to the kubelet over its socket, as every device plugin does.
func (p *hamiPlugin) register(ctx context.Context, kubeletSocketPath string) error {
	conn, err := grpc.NewClient("unix://"+kubeletSocketPath, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	call, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(call, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     pluginSocket,
		ResourceName: p.config.ResourceCountName,
	})
	return err
}

func (p *hamiPlugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch reports the devices once; they never change on a fake node.
func (p *hamiPlugin) ListAndWatch(_ *pluginapi.Empty, stream pluginapi.DevicePlugin_ListAndWatchServer) error {
	if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: p.devices}); err != nil {
		return err
	}
	<-stream.Context().Done()
	return nil
}

// Allocate does to the pod and the node what HAMi's Allocate does (nvinternal/plugin server.go and util.go, whose
// package needs NVIDIA modules the proxy refuses), with HAMi's own encoders and lock: the pod its scheduler bound
// to this node (found by the node lock), each container's next device request taken off
// hami.io/vgpu-devices-to-allocate, then the bind phase set and the node lock released.
func (p *hamiPlugin) Allocate(ctx context.Context, request *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	current, err := util.GetPendingPod(ctx, p.node)
	if err != nil {
		return nil, err
	}
	response := &pluginapi.AllocateResponse{}
	for _, containerRequest := range request.ContainerRequests {
		if err := takeNextContainerDevices(current, len(containerRequest.DevicesIds)); err != nil {
			p.finish(current, util.DeviceBindFailed)
			return nil, err
		}
		response.ContainerResponses = append(response.ContainerResponses, &pluginapi.ContainerAllocateResponse{})
	}
	p.finish(current, util.DeviceBindSuccess)
	klog.Infof("HAMi allocation done for pod %s/%s", current.Namespace, current.Name)
	return response, nil
}

// takeNextContainerDevices is GetNextDeviceRequest + EraseNextDeviceTypeFromAnnotation: the first container with
// NVIDIA devices still to allocate must ask as many as the kubelet hands over; its entry is emptied.
func takeNextContainerDevices(pod *corev1.Pod, asked int) error {
	key := device.InRequestDevices[nvidia.NvidiaGPUDevice]
	decoded, err := device.DecodePodDevices(device.InRequestDevices, pod.Annotations)
	if err != nil {
		return err
	}
	containers, ok := decoded[nvidia.NvidiaGPUDevice]
	if !ok {
		return errors.New("device request not found")
	}
	next := slices.IndexFunc(containers, func(devices device.ContainerDevices) bool { return len(devices) > 0 })
	if next < 0 {
		return errors.New("device request not found")
	}
	if len(containers[next]) != asked {
		return errors.New("device number not matched")
	}
	containers[next] = device.ContainerDevices{}
	annotation := device.EncodePodSingleDevice(containers)
	if err := util.PatchPodAnnotations(pod, map[string]string{key: annotation}); err != nil {
		return err
	}
	pod.Annotations[key] = annotation
	return nil
}

// finish is PodAllocationSuccess/Failed: the bind phase, then the node lock released for the next pod.
func (p *hamiPlugin) finish(pod *corev1.Pod, phase string) {
	if err := util.PatchPodAnnotations(pod, map[string]string{util.DeviceBindPhase: phase}); err != nil {
		klog.Errorf("setting %s=%s on pod %s/%s: %v", util.DeviceBindPhase, phase, pod.Namespace, pod.Name, err)
		return
	}
	if err := nodelock.ReleaseNodeLock(p.node, nvidia.NodeLockNvidia, pod, false); err != nil {
		klog.Errorf("releasing the node lock of %s: %v", p.node, err)
	}
}

func (p *hamiPlugin) GetPreferredAllocation(context.Context, *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	return &pluginapi.PreferredAllocationResponse{}, nil
}

func (p *hamiPlugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}
