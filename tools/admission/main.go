// Command admission runs gpushare's rendered admission policies on sample pods with the Kubernetes API
// server's own CEL compiler, matcher and ApplyConfiguration patcher (k8s.io/apiserver at the pinned
// version), so the expressions are checked the way kube-apiserver evaluates them, without a cluster.
//
// stdin: {"mutating": [MutatingAdmissionPolicy...], "validating": [ValidatingAdmissionPolicy...],
// "pods": [Pod...]}. stdout: per pod {"pod": <pod after the mutating policies>, "denied": [messages]}.
// Policies run in the order given; matchConstraints/bindings are not evaluated (the caller picks the
// policies of the pod's namespace).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/openapi/openapitest"
)

type input struct {
	Mutating   []admissionv1.MutatingAdmissionPolicy   `json:"mutating"`
	Validating []admissionv1.ValidatingAdmissionPolicy `json:"validating"`
	Pods       []corev1.Pod                            `json:"pods"`
}

type result struct {
	Pod    *corev1.Pod `json:"pod"`
	Denied []string    `json:"denied"`
}

var (
	podGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	podGVK = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	opts   = plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
)

type allowAll struct{}

func (allowAll) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionAllow, "", nil
}

func newCompiler() *plugincel.CompositedCompiler {
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		fail(err)
	}
	return compiler
}

func conditions(compiler *plugincel.CompositedCompiler, named map[string]string, policy admissionv1.FailurePolicyType, name string) matchconditions.Matcher {
	var accessors []plugincel.ExpressionAccessor
	for key, expression := range named {
		accessors = append(accessors, &matchconditions.MatchCondition{Name: key, Expression: expression})
	}
	return matchconditions.NewMatcher(compiler.CompileCondition(accessors, opts, environment.StoredExpressions), &policy, "policy", "check", name)
}

func attributes(pod *corev1.Pod) *admission.VersionedAttributes {
	record := admission.NewAttributesRecord(pod, nil, podGVK, pod.Namespace, pod.Name, podGVR, "", admission.Create, &metav1.CreateOptions{}, false, nil)
	return &admission.VersionedAttributes{Attributes: record, VersionedKind: podGVK, VersionedObject: pod}
}

// matches reports whether all conditions hold; a CEL error is returned, never treated as a match.
func matches(ctx context.Context, matcher matchconditions.Matcher, pod *corev1.Pod) (bool, error) {
	outcome := matcher.Match(ctx, attributes(pod), nil, allowAll{})
	return outcome.Matches, outcome.Error
}

func mutate(ctx context.Context, policy admissionv1.MutatingAdmissionPolicy, pod *corev1.Pod, converter patch.Request) (*corev1.Pod, error) {
	compiler := newCompiler()
	ctx = compiler.CreateContext(ctx)
	named := map[string]string{}
	for _, condition := range policy.Spec.MatchConditions {
		named[condition.Name] = condition.Expression
	}
	if len(named) > 0 {
		ok, err := matches(ctx, conditions(compiler, named, admissionv1.Fail, policy.Name), pod)
		if err != nil || !ok {
			return pod, err
		}
	}
	patchOpts := opts
	patchOpts.HasPatchTypes = true
	for _, mutation := range policy.Spec.Mutations {
		var patcher patch.Patcher
		switch mutation.PatchType {
		case admissionv1.PatchTypeApplyConfiguration:
			patcher = patch.NewApplyConfigurationPatcher(compiler.CompileMutatingEvaluator(&patch.ApplyConfigurationCondition{Expression: mutation.ApplyConfiguration.Expression}, patchOpts, environment.StoredExpressions))
		case admissionv1.PatchTypeJSONPatch:
			patcher = patch.NewJSONPatcher(compiler.CompileMutatingEvaluator(&patch.JSONPatchCondition{Expression: mutation.JSONPatch.Expression}, patchOpts, environment.StoredExpressions))
		default:
			return nil, fmt.Errorf("%s: unknown patchType %q", policy.Name, mutation.PatchType)
		}
		request := converter
		request.VersionedAttributes = attributes(pod)
		patched, err := patcher.Patch(ctx, request, celconfig.RuntimeCELCostBudget)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", policy.Name, err)
		}
		if pod, err = asPod(patched); err != nil {
			return nil, err
		}
	}
	return pod, nil
}

// asPod reads the patcher's result, which comes back unstructured.
func asPod(object runtime.Object) (*corev1.Pod, error) {
	if typed, ok := object.(*corev1.Pod); ok {
		return typed, nil
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(object)
	if err != nil {
		return nil, err
	}
	pod := &corev1.Pod{}
	return pod, runtime.DefaultUnstructuredConverter.FromUnstructured(content, pod)
}

func validate(ctx context.Context, policy admissionv1.ValidatingAdmissionPolicy, pod *corev1.Pod) ([]string, error) {
	var denied []string
	for i, validation := range policy.Spec.Validations {
		compiler := newCompiler()
		ok, err := matches(compiler.CreateContext(ctx), conditions(compiler, map[string]string{fmt.Sprint(i): validation.Expression}, admissionv1.Fail, policy.Name), pod)
		if err != nil {
			return nil, fmt.Errorf("%s validation %d: %w", policy.Name, i, err)
		}
		if !ok {
			denied = append(denied, validation.Message)
		}
	}
	return denied, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

func main() {
	var in input
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		fail(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Pod schema for the structured merge of apply configurations, from client-go's embedded OpenAPI.
	types := patch.NewTypeConverterManager(nil, openapitest.NewEmbeddedFileClient())
	go types.Run(ctx)
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return types.GetTypeConverter(podGVK) != nil, nil
	}); err != nil {
		fail(fmt.Errorf("no Pod schema: %w", err))
	}
	base := patch.Request{
		MatchedResource:   podGVR,
		ObjectInterfaces:  admission.NewObjectInterfacesFromScheme(scheme.Scheme),
		OptionalVariables: plugincel.OptionalVariableBindings{Authorizer: allowAll{}},
		TypeConverter:     types.GetTypeConverter(podGVK),
	}
	var results []result
	for i := range in.Pods {
		pod := in.Pods[i].DeepCopy()
		pod.APIVersion, pod.Kind = "v1", "Pod"
		var err error
		for _, policy := range in.Mutating {
			if pod, err = mutate(ctx, policy, pod, base); err != nil {
				fail(err)
			}
		}
		out := result{Pod: pod, Denied: []string{}}
		for _, policy := range in.Validating {
			denied, err := validate(ctx, policy, pod)
			if err != nil {
				fail(err)
			}
			out.Denied = append(out.Denied, denied...)
		}
		results = append(results, out)
	}
	if err := json.NewEncoder(os.Stdout).Encode(results); err != nil {
		fail(err)
	}
}
