package objstore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// KeyPath and Child are the scheme-independent view of a location that
// discovery, the ledger and config checks use.
func TestLocationKeyPathAndChild(t *testing.T) {
	for _, tc := range []struct {
		uri, keyPath, child string
	}{
		{"/data/lance", "/data/lance", "file:///data/lance/t1"},
		{"file:///data/lance/", "/data/lance", "file:///data/lance/t1"},
		{"s3://bkt", "", "s3://bkt/t1"},
		{"s3://bkt/tenants/a", "tenants/a", "s3://bkt/tenants/a/t1"},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			loc, err := objstore.ParseLocation(tc.uri)
			require.NoError(t, err)
			require.Equal(t, tc.keyPath, loc.KeyPath())
			require.Equal(t, tc.child, loc.Child("t1").String())
		})
	}
}
