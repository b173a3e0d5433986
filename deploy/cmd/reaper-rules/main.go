// Command reaper-rules writes deploy/prometheus/reaper-rules.yml, the plain
// Prometheus rule file, from deploy/prometheus/prometheusrule.yaml (package
// deploy/rules). Run it from deploy/ (`make rules`) after changing the
// rules; deploy's tests fail while the committed file differs.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/lance-reaper/reaper/deploy/rules"
)

func main() {
	in := filepath.Join("prometheus", "prometheusrule.yaml")
	out := filepath.Join("prometheus", "reaper-rules.yml")
	src, err := os.ReadFile(in)
	if err == nil {
		var plain []byte
		if plain, err = rules.PlainFile(src); err == nil {
			err = os.WriteFile(out, plain, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "reaper-rules: %v (run it in deploy/: make rules)\n", err)
		os.Exit(1)
	}
	fmt.Printf("reaper-rules: wrote %s from %s\n", out, in)
}
