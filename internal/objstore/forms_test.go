//go:build !fuzzonly

package objstore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
)

// TestFuzzCoversEveryForm fails when a backend of the registry brings a
// root-URI grammar of its own (a form with Parse) that FuzzParseLocation
// does not run on. Forms without Parse are scheme://bucket/prefix (the
// registry refuses any other), whose grammar the fuzz target covers.
func TestFuzzCoversEveryForm(t *testing.T) {
	fuzzed := map[string]string{}
	for _, f := range fuzzForms() {
		fuzzed[f.Prefix] = f.Syntax
	}
	for _, b := range all.Default().Backends() {
		for _, f := range b.Forms {
			if f.Parse == nil {
				continue
			}
			require.Equal(t, f.Syntax, fuzzed[f.Prefix], "backend %q: its form %s is not in fuzzForms (fuzz_test.go): add its package's forms there", b.Scheme, f.Syntax)
		}
	}
	require.Nil(t, objstore.BucketForm("s3").Parse, "bucket forms use the common grammar")
}
