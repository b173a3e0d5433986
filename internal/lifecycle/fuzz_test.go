package lifecycle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// FuzzParseMarker checks the marker reader on any bytes. Seeds live in
// testdata/fuzz/FuzzParseMarker; `make fuzz-short` and `make soak` run the
// fuzzer. Properties:
//   - it never panics, and every failure wraps ErrInvalidMarker;
//   - an accepted marker is one valid JSON object and nothing else (no
//     trailing data) with non-negative integer fields;
//   - an accepted marker re-encodes (compact, Lance's key order) and
//     re-parses to the same values; reaper's own EncodeMarker agrees when
//     the TTL fits a time.Duration;
//   - PurgeAfterMs never overflows: it is >= deleted_at_ms.
func FuzzParseMarker(f *testing.F) {
	f.Add([]byte(`{"deleted_at_ms":1767225600000,"ttl_ms":604800000}`))
	f.Add([]byte(`{"deleted_at_ms":1,"deleted_at_ms":2}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := ParseMarker(body)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidMarker, "body %q", body)
			return
		}
		require.True(t, json.Valid(body), "accepted a body that is not one JSON value: %q", body)
		var obj map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(body, &obj), "accepted a body that is not a JSON object: %q", body)
		require.NotNil(t, obj, "accepted JSON null: %q", body)
		// One value per field: what was parsed is what any JSON reader sees.
		var fields struct {
			DeletedAtMs json.Number `json:"deleted_at_ms"`
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&fields))
		n, err := fields.DeletedAtMs.Int64()
		require.NoError(t, err, "body %q", body)
		require.Equal(t, n, m.DeletedAtMs, "body %q", body)
		require.GreaterOrEqual(t, m.DeletedAtMs, int64(0))
		require.GreaterOrEqual(t, m.TTLMs, int64(0))
		if !m.HasTTL {
			require.Zero(t, m.TTLMs)
		}

		again, err := ParseMarker(canonicalMarker(m))
		require.NoError(t, err, "re-encoded %+v as %s", m, canonicalMarker(m))
		require.Equal(t, m, again)

		if m.HasTTL && m.TTLMs <= math.MaxInt64/int64(time.Millisecond) {
			enc := EncodeMarker(time.UnixMilli(m.DeletedAtMs), time.Duration(m.TTLMs)*time.Millisecond)
			require.Equal(t, canonicalMarker(m), enc)
		}
		for _, def := range []time.Duration{0, DefaultTTL, time.Duration(math.MaxInt64)} {
			require.GreaterOrEqual(t, m.PurgeAfterMs(def), m.DeletedAtMs, "def %v", def)
			require.GreaterOrEqual(t, m.TTL(def), time.Duration(0), "def %v", def)
		}
	})
}

// canonicalMarker is the compact form Lance writes, without ttl_ms when the
// marker carried none.
func canonicalMarker(m Marker) []byte {
	if !m.HasTTL {
		return fmt.Appendf(nil, `{"deleted_at_ms":%d}`, m.DeletedAtMs)
	}
	return fmt.Appendf(nil, `{"deleted_at_ms":%d,"ttl_ms":%d}`, m.DeletedAtMs, m.TTLMs)
}

// FuzzValidateName checks the name rules and the key layout built on them.
// Properties:
//   - a refused name wraps ErrInvalidName;
//   - an accepted name is not empty, "." or "..", and contains no '/', '\'
//     or NUL;
//   - its table dir, marker, lease and hold keys are valid store keys, one
//     path segment each at the root, and a root listing maps each back to
//     the same name and kind (so a listing never mistakes one for another).
func FuzzValidateName(f *testing.F) {
	f.Add("my_table")
	f.Fuzz(func(t *testing.T, name string) {
		err := ValidateName(name)
		if err != nil {
			require.True(t, errors.Is(err, ErrInvalidName), "error %v does not wrap ErrInvalidName", err)
			return
		}
		require.NotEmpty(t, name)
		require.NotEqual(t, ".", name)
		require.NotEqual(t, "..", name)
		require.False(t, strings.ContainsAny(name, "/\\\x00"), "accepted %q", name)

		dir := TableDir(name)
		require.NoError(t, objstore.ValidatePrefix(dir))
		require.Equal(t, 1, strings.Count(dir, "/"), "table dir %q must be one segment", dir)
		gotName, kind := classifyPrefix(dir)
		require.Equal(t, entryTable, kind, "prefix %q", dir)
		require.Equal(t, name, gotName, "prefix %q", dir)

		for _, k := range []struct {
			key  string
			kind entryKind
		}{{MarkerKey(name), entryMarker}, {LockKey(name), entryLock}, {HoldKey(name), entryHold}} {
			require.NoError(t, objstore.ValidateKey(k.key))
			require.NotContains(t, k.key, "/")
			gotName, kind := classifyObject(k.key)
			require.Equal(t, k.kind, kind, "key %q", k.key)
			require.Equal(t, name, gotName, "key %q", k.key)
		}
	})
}
