package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore/all"
)

func TestDropThenStatusJSON(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		t0 := time.UnixMilli(time.Now().UnixMilli())
		b.writeTable(t, "orders", t0.Add(-time.Hour))
		b.writeTable(t, "live", t0.Add(-time.Hour))
		o := b.opts
		o.setClock(b.clock, t0)

		var out bytes.Buffer
		err := runDrop(ctx, dropOptions{storeOptions: o, TTL: 36 * time.Hour, Names: []string{"orders"}}, &out)
		require.NoError(t, err)
		require.Contains(t, out.String(), "orders: dropped (soft-deleted): ttl 1d12h")

		ttl := (36 * time.Hour).Milliseconds()
		// deleted_at_ms is the store's clock at the drop; the table is due
		// once it and the marker's LastModified (the store's too) are a TTL
		// old.
		var m struct {
			DeletedAtMs int64 `json:"deleted_at_ms"`
		}
		body, _ := b.get(t, "orders.deleted")
		require.NoError(t, json.Unmarshal(body, &m))
		require.InDelta(t, t0.UnixMilli(), m.DeletedAtMs, 2000)
		var st struct {
			PurgeAfterMs int64 `json:"purge_after_ms"`
		}
		tests := []struct {
			name string
			now  time.Time
			due  bool
		}{
			{"before the ttl", t0.Add(time.Hour), false},
			{"after the ttl", t0.Add(37 * time.Hour), true},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				out.Reset()
				so := statusOptions{storeOptions: o, Output: "json", Names: []string{"orders", "live", "nope"}}
				so.setClock(b.clock, tc.now)
				require.NoError(t, runStatus(ctx, so, &out))
				var got []json.RawMessage
				require.NoError(t, json.Unmarshal(out.Bytes(), &got))
				require.Len(t, got, 3)
				require.NoError(t, json.Unmarshal(got[2], &st))
				require.GreaterOrEqual(t, st.PurgeAfterMs, m.DeletedAtMs+ttl)
				require.InDelta(t, m.DeletedAtMs+ttl, st.PurgeAfterMs, 2000)
				nulls := `"deleted_at_ms":null,"ttl_ms":null,"purge_after_ms":null,"due":false,"below_min_ttl":false,"problem":null,"lease_owner":null,"lease_expires_at_ms":null,"held":false,"hold_reason":null,"retention_record":false`
				want := fmt.Sprintf(`[
				{"name":"live","state":"exists",%s},
				{"name":"nope","state":"not_found",%s},
				{"name":"orders","state":"soft_deleted","deleted_at_ms":%d,"ttl_ms":%d,"purge_after_ms":%d,"due":%t,"below_min_ttl":false,"problem":null,"lease_owner":null,"lease_expires_at_ms":null,"held":false,"hold_reason":null,"retention_record":false}
			]`, nulls, nulls, m.DeletedAtMs, ttl, st.PurgeAfterMs, tc.due)
				require.JSONEq(t, want, out.String())
			})
		}

		t.Run("second drop keeps the marker", func(t *testing.T) {
			before, ok := b.get(t, "orders.deleted")
			require.True(t, ok)
			out.Reset()
			o2 := o
			o2.setClock(b.clock, t0.Add(time.Hour))
			err := runDrop(ctx, dropOptions{storeOptions: o2, Names: []string{"orders"}}, &out)
			require.Error(t, err)
			require.Equal(t, exitFailed, exitCode(err), "got %v", err)
			require.Contains(t, out.String(), "already soft-deleted")
			after, ok := b.get(t, "orders.deleted")
			require.True(t, ok)
			require.Equal(t, string(before), string(after), "marker must stay byte-identical")
		})

		t.Run("not found", func(t *testing.T) {
			out.Reset()
			err := runDrop(ctx, dropOptions{storeOptions: o, Names: []string{"live", "nope.lance"}}, &out)
			require.Equal(t, exitFailed, exitCode(err), "got %v", err)
			require.Contains(t, out.String(), "live: dropped")
			require.Contains(t, out.String(), "nope.lance: not dropped: not found")
			require.Contains(t, out.String(), `without the .lance suffix: "nope"`)
			require.Contains(t, err.Error(), "1 of 2 table(s) failed")
		})
	})
}

func TestDropDefaultTTL(t *testing.T) {
	b := localBackend(t)
	t0 := time.UnixMilli(time.Now().UnixMilli())
	b.writeTable(t, "a", t0.Add(-time.Hour))
	b.writeTable(t, "b", t0.Add(-time.Hour))
	o := b.opts
	o.setClock(b.clock, t0)
	var out bytes.Buffer
	require.NoError(t, runDrop(context.Background(), dropOptions{storeOptions: o, Names: []string{"a"}}, &out))
	body, _ := b.get(t, "a.deleted")
	// deleted_at_ms is the store's clock: this host's, for a local root.
	require.Regexp(t, fmt.Sprintf(`^\{"deleted_at_ms":\d+,"ttl_ms":%d\}$`, (7*24*time.Hour).Milliseconds()), string(body))
	var m struct {
		DeletedAtMs int64 `json:"deleted_at_ms"`
	}
	require.NoError(t, json.Unmarshal(body, &m))
	require.InDelta(t, t0.UnixMilli(), m.DeletedAtMs, 2000)

	o.DefaultTTL = time.Hour
	require.NoError(t, runDrop(context.Background(), dropOptions{storeOptions: o, Names: []string{"b"}}, &out))
	body, _ = b.get(t, "b.deleted")
	require.Regexp(t, fmt.Sprintf(`^\{"deleted_at_ms":\d+,"ttl_ms":%d\}$`, time.Hour.Milliseconds()), string(body))
}

// TestDropHintRevives: the "undo with" command drop prints revives the
// table as printed, on every backend: it carries the root's storage options
// (an S3 root on another endpoint is not reached without them), a secret's
// value left for the user to give again.
func TestDropHintRevives(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		b.writeTable(t, "orders", time.Now().Add(-time.Hour))
		var out bytes.Buffer
		require.NoError(t, runDrop(context.Background(), dropOptions{storeOptions: b.opts, Names: []string{"orders"}}, &out))
		_, hint, ok := strings.Cut(strings.TrimSpace(out.String()), "; undo with '")
		require.True(t, ok, out.String())
		hint = strings.TrimSuffix(hint, "'")
		secrets := map[string]string{}
		for _, kv := range b.opts.StorageOptions {
			k, v, _ := strings.Cut(kv, "=")
			if all.Default().IsSecretOption(k) {
				require.NotContains(t, hint, v, "a secret's value is never printed")
				secrets[k+"=..."] = k + "=" + v
			}
		}
		words := strings.Fields(hint)
		require.Equal(t, []string{"reaper", "revive"}, words[:2])
		for i, w := range words {
			// A word the hint quoted for the shell (shellWord): an
			// s3+ddb:// root's "?"; no hint word holds a space.
			if u, ok := strings.CutPrefix(w, "'"); ok {
				w = strings.ReplaceAll(strings.TrimSuffix(u, "'"), `'\''`, "'")
				words[i] = w
			}
			if s, ok := secrets[w]; ok {
				words[i] = s
			}
		}
		code, stdout, stderr := run(t, words[1:]...)
		require.Equal(t, exitOK, code, "%s\n%s%s", hint, stdout, stderr)
		_, ok = b.get(t, "orders.deleted")
		require.False(t, ok, "revived")
	})
}
