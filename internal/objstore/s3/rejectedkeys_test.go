package s3_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Reproduced bug: "An S3 key that DeleteObjects rejects (e.g. a control
// character) leaves the table half-purged for good". What versitygw v1.8.0
// does with such keys, measured with aws-sdk-go-v2 (s3 v1.114.10):
//
//	key (under r/)      PutObject  ListObjectsV2 <Key>           DeleteObjects (SDK)          DeleteObject
//	a\x01b, a\x1fb      ok         "a\uFFFDb": replaced          200, listed as Deleted, KEPT ok, deleted
//	bad\xffz (not UTF-8) ok        "bad\uFFFDz": replaced        200, listed as Deleted, KEPT ok, deleted
//	a\x7fb              ok         exact (raw byte)              deleted                      ok
//	"trail " (space)    ok         exact                         deleted                      ok
//	cr\r, lf\n, t\t     ok         exact (&#xD; &#xA; &#x9;)     deleted                      ok
//	\u0085, \u2028      ok         exact                         deleted                      ok
//	a&b<c>, p%41        ok         exact (escaped / literal)     deleted                      ok
//	u\uFFFDz (real)     ok         exact                         deleted                      ok
//	1024 bytes          ok         exact                         deleted                      ok
//	1025 bytes          ok (AWS rejects > 1024)  exact           deleted                      ok
//	a segment > 255 B   400 KeyTooLongError: cannot exist        per-key <Error> KeyTooLongError, rest of batch deleted; 400 alone
//
// Neither side reports the loss. The SDK's XML encoder writes U+FFFD for
// every character XML 1.0 cannot carry (and every byte that is not UTF-8),
// so the server is asked to delete another, missing key, and a missing key
// counts as deleted: no per-key <Error>, no rejected batch, a 200 that
// silently keeps the object. versitygw ignores encoding-type=url (it
// answers without <EncodingType> and with raw keys), and its own XML
// encoder replaces the same characters in listings, so a listing names a
// key that does not exist. AWS honours encoding-type=url, so there the
// listing is exact once decoded; its DeleteObjects body has the same
// limits as XML.
//
// The store now (batch.go, listkeys.go): lists with encoding-type=url and
// decodes; fails a listing that holds a replaced key (one with U+FFFD that
// a HEAD does not find), naming it, so a purge stops before deleting
// anything rather than half-way; deletes keys XML cannot carry, and keys a
// batch failed permanently, one by one with DeleteObject.

// keyOfLength is a key of exactly n bytes under prefix, in segments the
// posix backend accepts (at most 255 bytes each).
func keyOfLength(prefix string, n int) string {
	var b strings.Builder
	b.WriteString(prefix)
	for b.Len() < n {
		seg := min(200, n-b.Len())
		b.WriteString(strings.Repeat("x", seg))
		if b.Len() < n-1 {
			b.WriteString("/")
		}
	}
	return b.String()
}

// The purge's sequence over awkward keys (put, walk, delete the walked keys
// in a batch, walk again) leaves nothing behind; a key the server cannot
// name in a listing stops the walk with an error naming it, and a batch
// with its exact name deletes it.
func TestRejectedKeysPurge(t *testing.T) {
	srv, st := openTestStore(t, "", 0)
	ctx := t.Context()
	long := keyOfLength("t.lance/data/", 1024)
	require.Len(t, long, 1024)
	listable := []string{
		"t.lance/data/del\x7f", "t.lance/data/trail ", "t.lance/data/cr\r", "t.lance/data/lf\n",
		"t.lance/data/amp&<>", "t.lance/data/real\uFFFD", "t.lance/data/ls\u2028", "t.lance/data/plain", long,
	}
	unlistable := []string{"t.lance/data/ctl\x01", "t.lance/data/ctl\x1f", "t.lance/data/bad\xff"}
	for _, k := range slices.Concat(listable, unlistable) {
		_, err := st.Put(ctx, k, []byte("x"))
		require.NoError(t, err, "put %q", k)
	}

	// The bug, at the SDK level: a DeleteObjects naming the exact keys
	// answers success and keeps them.
	ids := make([]types.ObjectIdentifier, len(unlistable))
	for i, k := range unlistable {
		ids[i] = types.ObjectIdentifier{Key: aws.String(k)}
	}
	out, err := srv.Client.DeleteObjects(ctx, &awss3.DeleteObjectsInput{Bucket: &srv.Bucket, Delete: &types.Delete{Objects: ids}})
	require.NoError(t, err, "raw DeleteObjects")
	require.Empty(t, out.Errors, "no per-key error for keys the XML mangled")
	for _, k := range unlistable {
		_, err := st.Head(ctx, k)
		require.NoError(t, err, "%q survives a raw DeleteObjects", k)
	}

	var walked []string
	err = st.Walk(ctx, "t.lance/", func(objs []objstore.Object) error {
		for _, o := range objs {
			walked = append(walked, o.Key)
		}
		return nil
	})
	want := slices.Concat(listable, unlistable)
	if err != nil {
		t.Logf("walk over keys the listing cannot name: %v", err)
		// versitygw: its listing cannot name these keys. The walk says
		// which one it met (U+FFFD spelled out), so a purge stops before
		// deleting anything instead of half-way.
		require.Contains(t, err.Error(), "encoding-type=url", "the walk error explains: %v", err)
		require.Regexp(t, `"t\.lance/data/(ctl|bad)\\ufffd"`, err.Error(), "the walk error names a replaced key")
		// Deleted by their exact names, in a batch, they go.
		require.NoError(t, st.DeleteBatch(ctx, unlistable), "batch of the exact keys")
		walked, want = walkKeys(t, st, "t.lance/"), listable
	}
	require.ElementsMatch(t, want, walked, "walked keys are the stored keys, exactly")

	require.NoError(t, st.DeleteBatch(ctx, walked), "batch delete of the walked keys")
	require.Empty(t, walkKeys(t, st, "t.lance/"), "nothing left behind")
	for _, k := range slices.Concat(listable, unlistable) {
		_, err := st.Head(ctx, k)
		require.ErrorIs(t, err, objstore.ErrNotFound, "%q is gone", k)
	}
}

func walkKeys(t *testing.T, st objstore.Store, prefix string) []string {
	t.Helper()
	var keys []string
	require.NoError(t, st.Walk(t.Context(), prefix, func(objs []objstore.Object) error {
		for _, o := range objs {
			keys = append(keys, o.Key)
		}
		return nil
	}), "walk %s", prefix)
	return keys
}
