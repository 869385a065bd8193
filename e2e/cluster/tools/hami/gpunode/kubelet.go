package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

const (
	kubeletSocket    = "kubelet.sock"
	maxAllocateTries = 20
)

func corev1ResourceName(name string) corev1.ResourceName { return corev1.ResourceName(name) }

// kubelet is the part of a kubelet's device manager the device plugins talk to.
type kubelet struct {
	pluginapi.UnimplementedRegistrationServer
	kube   kubernetes.Interface
	node   string
	dir    string
	server *grpc.Server

	mu       sync.Mutex
	plugins  map[string]*grpc.ClientConn // resource name -> connection to its plugin
	devices  map[string][]string         // resource name -> healthy device IDs
	admitted map[types.UID]bool
	failures map[types.UID]int
	status   map[string]int64 // what was last written into the Node's status
}

func newKubelet(kube kubernetes.Interface, node, dir string) *kubelet {
	return &kubelet{
		kube: kube, node: node, dir: dir,
		plugins:  map[string]*grpc.ClientConn{},
		devices:  map[string][]string{},
		admitted: map[types.UID]bool{},
		failures: map[types.UID]int{},
		status:   map[string]int64{},
	}
}

func (k *kubelet) serve() error {
	if err := os.MkdirAll(k.dir, 0o755); err != nil {
		return err
	}
	server, err := serveUnix(filepath.Join(k.dir, kubeletSocket), func(s *grpc.Server) {
		pluginapi.RegisterRegistrationServer(s, k)
	})
	k.server = server
	return err
}

// serveUnix serves gRPC on a unix socket at path (replacing a stale one), as the kubelet and plugins do.
func serveUnix(path string, register func(*grpc.Server)) (*grpc.Server, error) {
	_ = os.Remove(path)
	listener, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	server := grpc.NewServer()
	register(server)
	go func() { _ = server.Serve(listener) }()
	return server, nil
}

func (k *kubelet) close() {
	k.server.Stop()
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, conn := range k.plugins {
		_ = conn.Close()
	}
}

// Register is called by each device plugin; like the kubelet, it then lists the plugin's devices and keeps
// watching them.
func (k *kubelet) Register(_ context.Context, request *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	if request.Version != pluginapi.Version {
		return nil, fmt.Errorf("unsupported device plugin API version %q", request.Version)
	}
	conn, err := grpc.NewClient("unix://"+filepath.Join(k.dir, request.Endpoint),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	if old, ok := k.plugins[request.ResourceName]; ok {
		_ = old.Close()
	}
	k.plugins[request.ResourceName] = conn
	k.mu.Unlock()
	klog.Infof("device plugin registered: %s at %s", request.ResourceName, request.Endpoint)
	go k.watch(request.ResourceName, conn)
	return &pluginapi.Empty{}, nil
}

// watch follows one plugin's ListAndWatch and writes its healthy device count into the Node's status.
func (k *kubelet) watch(resource string, conn *grpc.ClientConn) {
	stream, err := pluginapi.NewDevicePluginClient(conn).ListAndWatch(context.Background(), &pluginapi.Empty{})
	if err != nil {
		klog.Errorf("ListAndWatch %s: %v", resource, err)
		return
	}
	for {
		response, err := stream.Recv()
		if err != nil {
			klog.Infof("ListAndWatch %s ended: %v", resource, err)
			return
		}
		var healthy []string
		for _, device := range response.Devices {
			if device.Health == pluginapi.Healthy {
				healthy = append(healthy, device.ID)
			}
		}
		k.mu.Lock()
		k.devices[resource] = healthy
		changed := k.status[resource] != int64(len(healthy))
		k.status[resource] = int64(len(healthy))
		k.mu.Unlock()
		if changed {
			if err := k.writeStatus(resource, len(healthy)); err != nil {
				klog.Errorf("writing %s=%d into node %s: %v", resource, len(healthy), k.node, err)
				k.mu.Lock()
				delete(k.status, resource)
				k.mu.Unlock()
				continue
			}
			klog.Infof("node %s registers %s=%d", k.node, resource, len(healthy))
		}
	}
}

func (k *kubelet) writeStatus(resource string, count int) error {
	amount := fmt.Sprint(count)
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{
		"capacity":    map[string]string{resource: amount},
		"allocatable": map[string]string{resource: amount},
	}})
	_, err := k.kube.CoreV1().Nodes().PatchStatus(context.Background(), k.node, patch)
	return err
}

// admitPods calls Allocate, once per pod and container as the kubelet does when it admits a pod, on the
// plugin of each device resource a container requests.
func (k *kubelet) admitPods(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
		pods, err := k.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + k.node})
		if err != nil {
			continue
		}
		for i := range pods.Items {
			pod := &pods.Items[i]
			if k.admitted[pod.UID] || pod.DeletionTimestamp != nil {
				continue
			}
			if err := k.allocate(ctx, pod); err != nil {
				// A kubelet fails the pod's admission; the rig retries a while (the bind may still be settling)
				// and then leaves the pod as it is, its error in this log.
				k.failures[pod.UID]++
				klog.Errorf("Allocate for pod %s/%s (try %d): %v", pod.Namespace, pod.Name, k.failures[pod.UID], err)
				if k.failures[pod.UID] < maxAllocateTries {
					continue
				}
			}
			k.admitted[pod.UID] = true
		}
	}
}

func (k *kubelet) allocate(ctx context.Context, pod *corev1.Pod) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	requests := map[string]*pluginapi.AllocateRequest{}
	for _, container := range pod.Spec.Containers {
		for resource, conn := range k.plugins {
			quantity, ok := container.Resources.Limits[corev1.ResourceName(resource)]
			if !ok || quantity.Value() == 0 || conn == nil {
				continue
			}
			devices := k.devices[resource]
			if int(quantity.Value()) > len(devices) {
				return fmt.Errorf("container %s asks %s=%d, the node has %d", container.Name, resource, quantity.Value(), len(devices))
			}
			if requests[resource] == nil {
				requests[resource] = &pluginapi.AllocateRequest{}
			}
			requests[resource].ContainerRequests = append(requests[resource].ContainerRequests,
				&pluginapi.ContainerAllocateRequest{DevicesIds: devices[:quantity.Value()]})
		}
	}
	for resource, request := range requests {
		call, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := pluginapi.NewDevicePluginClient(k.plugins[resource]).Allocate(call, request)
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", resource, err)
		}
		klog.Infof("allocated %s for pod %s/%s", resource, pod.Namespace, pod.Name)
	}
	return nil
}
