package s3_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// listResult answers a ListObjectsV2 with body inside ListBucketResult.
func listResult(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/xml")
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bkt</Name><IsTruncated>false</IsTruncated>%s</ListBucketResult>`, body)
}

func listedObject(key string) string {
	return `<Contents><Key>` + key + `</Key><Size>1</Size><ETag>"e"</ETag><LastModified>2026-01-02T03:04:05.000Z</LastModified></Contents>`
}

// Listings ask for url-encoded keys and decode them (AWS encodes a space
// as "+"), so keys XML cannot carry come back exactly.
func TestWireListURLEncodedKeys(t *testing.T) {
	st, f, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
		listResult(w, `<EncodingType>url</EncodingType><Prefix>root%2Fd%2F</Prefix>`+
			listedObject("root%2Fd%2Fa%01b")+
			listedObject("root/d/bad%FFz")+
			listedObject("root/d/plus%2B+space")+
			listedObject("root/d/t%0D")+
			`<CommonPrefixes><Prefix>root%2Fd%2Fsub%1F%2F</Prefix></CommonPrefixes>`)
	})
	var objs []objstore.Object
	var prefixes []string
	require.NoError(t, st.List(t.Context(), "d/", func(p objstore.Page) error {
		objs = append(objs, p.Objects...)
		prefixes = append(prefixes, p.Prefixes...)
		return nil
	}))
	require.Equal(t, []string{"d/a\x01b", "d/bad\xffz", "d/plus+ space", "d/t\r"}, keysOf(objs), "decoded keys: got/want")
	require.Equal(t, []string{"d/sub\x1f/"}, prefixes, "decoded prefixes: got/want")
	reqs := f.requests()
	require.Len(t, reqs, 1)
	require.Contains(t, reqs[0].Query, "encoding-type=url")
	require.Contains(t, reqs[0].Query, "prefix=root%2Fd%2F", "the request's prefix is not encoded twice")
}

func TestWireListBadEncoding(t *testing.T) {
	st, _, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
		listResult(w, `<EncodingType>url</EncodingType>`+listedObject("root/%zz"))
	})
	err := st.Walk(t.Context(), "", func([]objstore.Object) error { return nil })
	require.ErrorContains(t, err, "decode listed key")
}

// A server that ignores encoding-type=url writes U+FFFD for what XML cannot
// carry. A listed key holding U+FFFD is headed: one that exists is listed,
// one that does not fails the listing, naming it.
func TestWireListReplacedKeys(t *testing.T) {
	for name, head := range map[string]int{"real key": 200, "replaced": 404} {
		t.Run(name, func(t *testing.T) {
			st, f, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
				if r.Method == http.MethodHead {
					if head != 200 {
						s3Error(w, head, "NoSuchKey")
					}
					return
				}
				listResult(w, listedObject("root/d/ok")+listedObject("root/d/a\uFFFDb"))
			})
			var got []objstore.Object
			err := st.Walk(t.Context(), "d/", func(objs []objstore.Object) error {
				got = append(got, objs...)
				return nil
			})
			reqs := f.requests()
			require.Len(t, reqs, 2, "the listing and one HEAD")
			require.Equal(t, http.MethodHead, reqs[1].Method)
			require.Equal(t, "/bkt/root/d/a\uFFFDb", reqs[1].Path)
			if head == 200 {
				require.NoError(t, err)
				require.Equal(t, []string{"d/ok", "d/a\uFFFDb"}, keysOf(got))
				return
			}
			require.Error(t, err)
			require.Empty(t, got, "no page with an inexact key is delivered")
			require.Contains(t, err.Error(), `walk d/: `)
			require.Contains(t, err.Error(), `"d/a\ufffdb"`, "the error names the key, U+FFFD spelled out")
			require.Contains(t, err.Error(), "encoding-type=url")
		})
	}
}

func keysOf(objs []objstore.Object) []string {
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	return keys
}
