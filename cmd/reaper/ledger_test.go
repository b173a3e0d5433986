package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/lance-reaper/reaper/internal/ledger"
	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// refuseLedger fails the audit ledger's writes of keys with prefix, as a
// bucket policy or a full disk would.
type refuseLedger struct {
	objstore.Store
	prefix string
}

var errLedgerDenied = errors.New("access denied (injected)")

func (r refuseLedger) Put(ctx context.Context, k string, b []byte) (objstore.Object, error) {
	if strings.HasPrefix(k, r.prefix) {
		return objstore.Object{}, errLedgerDenied
	}
	return r.Store.Put(ctx, k, b)
}

func (r refuseLedger) PutIfAbsent(ctx context.Context, k string, b []byte) (objstore.Object, error) {
	if strings.HasPrefix(k, r.prefix) {
		return objstore.Object{}, errLedgerDenied
	}
	return r.Store.PutIfAbsent(ctx, k, b)
}

// A lost audit record fails `reaper purge`: exit 1, the JSON's
// ledger_errors, reaper_ledger_write_failures_total and result partial.
// A journal that refuses a purge's intent keeps the table (failed,
// ledger); a pass file that cannot be written comes after the purge.
func TestPurgeFailsOnLedgerWriteFailures(t *testing.T) {
	objstoretest.ForEachBackend(t, func(t *testing.T, be objstoretest.Backend) {
		b := newBackend(t, be.NewRoot(t))
		audit := be.NewRoot(t) // the ledger's own location
		ctx := context.Background()
		t0 := time.UnixMilli(time.Now().UnixMilli())
		b.writeTable(t, "due", t0.Add(-time.Hour))
		b.writeMarker(t, "due", lifecycle.EncodeMarker(t0, 7*day), t0)
		cfg, err := yaml.Marshal(map[string]any{"audit": map[string]any{"location": audit.URI, "storage_options": audit.Options}})
		require.NoError(t, err)
		cfgPath := filepath.Join(t.TempDir(), "reaper.yaml")
		require.NoError(t, os.WriteFile(cfgPath, cfg, 0o600))

		for _, tc := range []struct {
			prefix string
			code   string // the table's failure code; "" when it is purged
		}{
			{ledger.JournalPrefix, string(outcome.ReasonLedger)},
			{ledger.Prefix, ""},
		} {
			o := purgeOptions{storeOptions: b.opts, Output: "json"}
			o.setClock(b.clock, t0.Add(8*day))
			o.ConfigPath = cfgPath
			o.Textfile = filepath.Join(t.TempDir(), "reaper.prom")
			o.wrapLedger = func(s objstore.Store) objstore.Store { return refuseLedger{Store: s, prefix: tc.prefix} }
			var logs bytes.Buffer
			o.Stderr, o.LogFormat, o.LogLevel = &logs, "json", "info"
			var out bytes.Buffer
			err := runPurge(ctx, o, &out)
			require.Equal(t, 1, exitCode(err), "refusing %s: err %v; output %s", tc.prefix, err, out.String())
			require.ErrorContains(t, err, "audit ledger write(s) failed")
			rep, _ := decodeReport(t, out.Bytes())
			require.Len(t, rep.LedgerErrors, 1, out.String())
			require.Contains(t, rep.LedgerErrors[0], errLedgerDenied.Error())
			prom, rerr := os.ReadFile(o.Textfile)
			require.NoError(t, rerr)
			require.Contains(t, string(prom), "reaper_ledger_write_failures_total 1\n")
			require.Contains(t, string(prom), `reaper_passes_total{result="partial"} 1`)
			require.Contains(t, logs.String(), `"result":"partial"`)
			if tc.code != "" {
				require.Len(t, rep.Failed, 1, out.String())
				require.Equal(t, "due", rep.Failed[0].Name)
				require.Equal(t, outcome.Reason(tc.code), rep.Failed[0].Code)
				require.NotEmpty(t, b.tableKeys(t, "due"), "nothing deleted without an audit record")
				require.True(t, b.hasKey(t, "due.deleted"))
				require.False(t, b.hasKey(t, lifecycle.CommitKey("due")), "nothing committed")
				continue
			}
			require.Len(t, rep.Purged, 1, out.String())
			require.Empty(t, b.tableKeys(t, "due"))
		}
	}, objstoretest.Shared()...)
}
