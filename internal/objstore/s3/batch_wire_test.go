package s3_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// emptyDeleteResult answers a DeleteObjects with no per-key error.
const emptyDeleteResult = `<?xml version="1.0" encoding="UTF-8"?><DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"></DeleteResult>`

// Keys XML cannot carry never enter a DeleteObjects body, where the SDK
// would write U+FFFD and the server would delete another (missing) key and
// report success; they go alone, named in the URL path.
func TestWireDeleteBatchKeysXMLCannotCarry(t *testing.T) {
	st, f, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
		if r.Method == http.MethodPost {
			w.Header().Set("Content-Type", "application/xml")
			w.Write([]byte(emptyDeleteResult))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	keys := []string{"a", "b\x01c", "d\xffe", "f\x7f", "g\r", "h ", "i\t\n", "j\uFFFD"}
	require.NoError(t, st.DeleteBatch(t.Context(), keys))

	reqs := f.requests()
	require.Len(t, reqs, 3, "one batch and two deletes alone")
	require.Equal(t, http.MethodPost, reqs[0].Method)
	for _, k := range []string{"root/a", "root/f\x7f", "root/g&#xD;", "root/h ", "root/i&#x9;&#xA;", "root/j\uFFFD"} {
		require.Contains(t, reqs[0].Body, "<Key>"+k+"</Key>", "XML carries %q", k)
	}
	require.NotContains(t, reqs[0].Body, "<Key>root/b", "b goes alone")
	require.NotContains(t, reqs[0].Body, "<Key>root/d", "d goes alone")
	var alone []string
	for _, r := range reqs[1:] {
		require.Equal(t, http.MethodDelete, r.Method)
		alone = append(alone, r.Path)
	}
	require.Equal(t, []string{"/bkt/root/b\x01c", "/bkt/root/d\xffe"}, alone, "exact keys in the URL path")

	f.mu.Lock()
	f.reqs = nil
	f.mu.Unlock()
	require.NoError(t, st.DeleteBatch(t.Context(), []string{"x\x02"}))
	reqs = f.requests()
	require.Len(t, reqs, 1, "no batch for keys that all go alone")
	require.Equal(t, http.MethodDelete, reqs[0].Method)
}

// A key whose own delete fails is named with that error; the others are
// deleted.
func TestWireDeleteBatchAloneFailureNamed(t *testing.T) {
	st, _, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
		switch {
		case r.Method == http.MethodPost:
			w.Header().Set("Content-Type", "application/xml")
			w.Write([]byte(emptyDeleteResult))
		case strings.HasSuffix(r.Path, "\x01"):
			s3Error(w, 400, "InvalidArgument")
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	})
	err := st.DeleteBatch(t.Context(), []string{"a", "b\x01", "c\x02"})
	var be *objstore.BatchError
	require.ErrorAs(t, err, &be)
	require.Len(t, be.Failed, 1)
	require.Equal(t, "b\x01", be.Failed[0].Key)
	require.Contains(t, be.Failed[0].Err.Error(), "InvalidArgument")
	require.Contains(t, err.Error(), `b`+"\x01", "the batch error names the key")
}

// A per-key error for a key the batch did not name is reported as the
// server named it, and not deleted alone: the store cannot tell which of
// its keys it stands for.
func TestWireDeleteBatchUnnamedKeyError(t *testing.T) {
	var mu sync.Mutex
	deletes := 0
	st, _, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
		if r.Method == http.MethodDelete {
			mu.Lock()
			deletes++
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/xml")
		w.Write([]byte(`<DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Error><Key>root/A</Key><Code>InvalidArgument</Code><Message>no</Message></Error></DeleteResult>`))
	})
	err := st.DeleteBatch(t.Context(), []string{"a"})
	var be *objstore.BatchError
	require.ErrorAs(t, err, &be)
	require.Equal(t, "A", be.Failed[0].Key)
	mu.Lock()
	defer mu.Unlock()
	require.Zero(t, deletes, "no delete alone of a key the batch did not name")
}
