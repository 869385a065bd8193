// Command awscrds writes the CRDs embedded in github.com/aws/karpenter-provider-aws/pkg/apis as a YAML
// stream on stdout.
package main

import (
	"fmt"
	"os"

	"github.com/aws/karpenter-provider-aws/pkg/apis"
	"sigs.k8s.io/yaml"
)

func main() {
	for _, crd := range apis.CRDs {
		out, err := yaml.Marshal(crd)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("---\n%s", out)
	}
}
