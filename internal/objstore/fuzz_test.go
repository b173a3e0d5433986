package objstore_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/azure/azuri"
	"github.com/lance-reaper/reaper/internal/objstore/local"
	"github.com/lance-reaper/reaper/internal/objstore/s3ddb/ddburi"
)

// fuzzForms are the root-URI forms FuzzParseLocation runs on: every form
// of the registry (all.Default) that has a grammar of its own, and the
// bucket/prefix grammar the other forms share (under two schemes). The
// registry links every SDK, which the fuzz build must not (see
// internal/fuzzbuild_test.go), so the forms are named here, from the
// SDK-free packages that declare them; TestFuzzCoversEveryForm fails when
// a backend brings a grammar this list does not name.
func fuzzForms() []objstore.URIForm {
	forms := local.Backend().Forms
	forms = append(forms, objstore.BucketForm("s3"), objstore.BucketForm("gs"))
	forms = append(forms, azuri.Forms()...)
	return append(forms, ddburi.Forms()...)
}

// FuzzParseLocation checks the root-URI grammar on any string. Seeds live in
// testdata/fuzz/FuzzParseLocation. Properties:
//   - it never panics; an error names the URI's accepted forms;
//   - a file root is an absolute, clean path without NUL; a bucket root
//     (s3, gs, az) has a bucket without '/', '?' or '#' and a prefix that is
//     "" or a valid key without leading or trailing '/';
//   - the canonical URI (String) parses back to the same location: a root
//     that is printed, logged, sharded or re-opened from its URI is the same
//     directory or prefix, never a neighbour.
func FuzzParseLocation(f *testing.F) {
	f.Add("s3://bucket/prefix")
	f.Add("gs://bucket/prefix")
	f.Add("az://container/prefix")
	f.Add("abfss://container@account.dfs.core.windows.net/prefix")
	f.Add("s3+ddb://bucket/prefix?ddbTableName=lance")
	f.Fuzz(func(t *testing.T, uri string) {
		forms := fuzzForms()
		loc, err := objstore.ParseLocation(uri, forms)
		if err != nil {
			require.Contains(t, err.Error(), "accepted forms")
			return
		}
		switch loc.Scheme {
		case local.Scheme:
			require.True(t, filepath.IsAbs(loc.Path), "path %q", loc.Path)
			require.Equal(t, filepath.Clean(loc.Path), loc.Path)
			require.NotContains(t, loc.Path, "\x00")
			require.Empty(t, loc.Bucket)
			require.Empty(t, loc.Prefix)
		case "s3", "gs":
			require.Nil(t, loc.Form)
			require.NotEmpty(t, loc.Bucket)
			require.False(t, strings.ContainsAny(loc.Bucket, "/?#"), "bucket %q", loc.Bucket)
			require.False(t, strings.HasPrefix(loc.Prefix, "/") || strings.HasSuffix(loc.Prefix, "/"), "prefix %q", loc.Prefix)
			if loc.Prefix != "" {
				require.NoError(t, objstore.ValidateKey(loc.Prefix))
			}
			require.Empty(t, loc.Path)
		case azuri.Scheme:
			require.NotEmpty(t, loc.Bucket)
			require.False(t, strings.ContainsAny(loc.Bucket, "/?#@"), "container %q", loc.Bucket)
			require.False(t, strings.ContainsAny(azuri.Account(loc), "/?#@.:"), "account %q", azuri.Account(loc))
			require.False(t, strings.HasPrefix(loc.Prefix, "/") || strings.HasSuffix(loc.Prefix, "/"), "prefix %q", loc.Prefix)
			if loc.Prefix != "" {
				require.NoError(t, objstore.ValidateKey(loc.Prefix))
			}
			require.Empty(t, loc.Path)
		case ddburi.Scheme:
			require.NotEmpty(t, loc.Bucket)
			require.False(t, strings.ContainsAny(loc.Bucket, "/?#"), "bucket %q", loc.Bucket)
			require.False(t, strings.HasPrefix(loc.Prefix, "/") || strings.HasSuffix(loc.Prefix, "/"), "prefix %q", loc.Prefix)
			if loc.Prefix != "" {
				require.NoError(t, objstore.ValidateKey(loc.Prefix))
			}
			require.Regexp(t, `^[A-Za-z0-9_.-]{3,255}$`, ddburi.Table(loc))
			require.Empty(t, loc.Path)
		default:
			t.Fatalf("unknown scheme %q from %q", loc.Scheme, uri)
		}
		canon := loc.String()
		again, err := objstore.ParseLocation(canon, forms)
		require.NoError(t, err, "canonical URI %q of %q does not parse", canon, uri)
		require.Equal(t, loc, again, "%q -> %q names another root", uri, canon)
		require.Equal(t, canon, again.String())
	})
}
