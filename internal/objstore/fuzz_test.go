package objstore_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// FuzzParseLocation checks the root-URI grammar on any string. Seeds live in
// testdata/fuzz/FuzzParseLocation. Properties:
//   - it never panics; an error names the URI's accepted forms;
//   - a file root is an absolute, clean path without NUL; an s3 or gs root has a
//     bucket without '/', '?' or '#' and a prefix that is "" or a valid key
//     without leading or trailing '/';
//   - the canonical URI (String) parses back to the same location: a root
//     that is printed, logged, sharded or re-opened from its URI is the same
//     directory or prefix, never a neighbour.
func FuzzParseLocation(f *testing.F) {
	f.Add("s3://bucket/prefix")
	f.Add("gs://bucket/prefix")
	f.Add("az://container/prefix")
	f.Add("abfss://container@account.dfs.core.windows.net/prefix")
	f.Fuzz(func(t *testing.T, uri string) {
		loc, err := objstore.ParseLocation(uri)
		if err != nil {
			require.Contains(t, err.Error(), "accepted forms")
			return
		}
		switch loc.Scheme {
		case objstore.SchemeFile:
			require.True(t, filepath.IsAbs(loc.Path), "path %q", loc.Path)
			require.Equal(t, filepath.Clean(loc.Path), loc.Path)
			require.NotContains(t, loc.Path, "\x00")
			require.Empty(t, loc.Bucket)
			require.Empty(t, loc.Prefix)
		case objstore.SchemeS3, objstore.SchemeGS:
			require.NotEmpty(t, loc.Bucket)
			require.False(t, strings.ContainsAny(loc.Bucket, "/?#"), "bucket %q", loc.Bucket)
			require.False(t, strings.HasPrefix(loc.Prefix, "/") || strings.HasSuffix(loc.Prefix, "/"), "prefix %q", loc.Prefix)
			if loc.Prefix != "" {
				require.NoError(t, objstore.ValidateKey(loc.Prefix))
			}
			require.Empty(t, loc.Path)
		case objstore.SchemeAzure:
			require.NotEmpty(t, loc.Bucket)
			require.False(t, strings.ContainsAny(loc.Bucket, "/?#@"), "container %q", loc.Bucket)
			require.False(t, strings.ContainsAny(loc.Account, "/?#@.:"), "account %q", loc.Account)
			require.False(t, strings.HasPrefix(loc.Prefix, "/") || strings.HasSuffix(loc.Prefix, "/"), "prefix %q", loc.Prefix)
			if loc.Prefix != "" {
				require.NoError(t, objstore.ValidateKey(loc.Prefix))
			}
			require.Empty(t, loc.Path)
		default:
			t.Fatalf("unknown scheme %q from %q", loc.Scheme, uri)
		}
		canon := loc.String()
		again, err := objstore.ParseLocation(canon)
		require.NoError(t, err, "canonical URI %q of %q does not parse", canon, uri)
		require.Equal(t, loc, again, "%q -> %q names another root", uri, canon)
		require.Equal(t, canon, again.String())
	})
}
