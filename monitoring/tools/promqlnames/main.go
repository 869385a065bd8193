// Command promqlnames parses PromQL expressions with Prometheus's own parser and reports every expression
// that does not parse or selects a metric outside an allowed list.
//
// Input (stdin, JSON): {"metrics": ["up", ...], "expressions": [["where", "expr"], ...]}.
// Output: one line per problem on stdout; exit 1 when there is any.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/prometheus/prometheus/promql/parser"
)

type input struct {
	Metrics     []string    `json:"metrics"`
	Expressions [][2]string `json:"expressions"`
}

func main() {
	var in input
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		fmt.Fprintf(os.Stderr, "promqlnames: bad input: %v\n", err)
		os.Exit(2)
	}
	allowed := map[string]bool{}
	for _, m := range in.Metrics {
		allowed[m] = true
	}
	problems := 0
	p := parser.NewParser(parser.Options{})
	for _, e := range in.Expressions {
		where, text := e[0], e[1]
		expr, err := p.ParseExpr(text)
		if err != nil {
			fmt.Printf("%s: does not parse: %v\n", where, err)
			problems++
			continue
		}
		unknown := map[string]bool{}
		for _, vs := range parser.ExtractSelectors(expr) {
			for _, m := range vs {
				if m.Name == "__name__" && !allowed[m.Value] {
					unknown[m.Value] = true
				}
			}
		}
		names := make([]string, 0, len(unknown))
		for n := range unknown {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Printf("%s: metric %s is not in gpushare/monitoring/metrics.yaml\n", where, n)
			problems++
		}
	}
	if problems > 0 {
		os.Exit(1)
	}
}
