// Command crds writes, as a YAML stream on stdout, the CRDs of Karpenter core that the AWS provider's CRDs do not
// cover: the KWOKNodeClass embedded in sigs.k8s.io/karpenter/kwok/apis and the CapacityBuffer
// (autoscaling.x-k8s.io) embedded in sigs.k8s.io/karpenter/pkg/apis.
package main

import (
	"fmt"
	"os"

	"github.com/awslabs/operatorpkg/object"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/karpenter/kwok/apis"
	coreapis "sigs.k8s.io/karpenter/pkg/apis"
	"sigs.k8s.io/yaml"
)

func main() {
	crds := append(apis.CRDs, object.Unmarshal[apiextensionsv1.CustomResourceDefinition](coreapis.CapacityBufferCRD))
	for _, crd := range crds {
		out, err := yaml.Marshal(crd)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("---\n%s", out)
	}
}
