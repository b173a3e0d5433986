package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// reaper drop, purge and audit end to end on a gs:// root, with the audit
// ledger at a gs:// location too (its storage options from the config
// file), against fake-gcs-server.
func TestGCSDropPurgeAudit(t *testing.T) {
	b := gcsBackend(t)
	srv := objstoretest.GCS(t) // a second bucket: the ledger's
	ctx := context.Background()
	t0 := time.UnixMilli(time.Now().UnixMilli())
	objs, size := b.writeTable(t, "events", t0.Add(-time.Hour))
	b.writeTable(t, "live", t0.Add(-time.Hour))

	o := b.opts
	o.setClock(b.clock, t0)
	var out bytes.Buffer
	require.NoError(t, runDrop(ctx, dropOptions{storeOptions: o, TTL: 2 * day, Names: []string{"events"}}, &out))
	require.True(t, b.hasKey(t, "events.deleted"), "drop writes the marker on gs://")

	ledgerURI := srv.URI("audit")
	cfg, err := yaml.Marshal(map[string]any{"audit": map[string]any{"location": ledgerURI, "storage_options": srv.Options()}})
	require.NoError(t, err)
	cfgPath := filepath.Join(t.TempDir(), "reaper.yaml")
	require.NoError(t, os.WriteFile(cfgPath, cfg, 0o600))

	later := o
	later.setClock(b.clock, t0.Add(3*day))
	out.Reset()
	po := purgeOptions{storeOptions: later, Output: "json"}
	po.ConfigPath = cfgPath
	require.NoError(t, runPurge(ctx, po, &out), out.String())
	rep, _ := decodeReport(t, out.Bytes())
	require.Equal(t, []purgedJSON{{Name: "events", Objects: objs, Bytes: size}}, rep.Purged)
	require.Empty(t, b.tableKeys(t, "events"), "the table's objects are gone")
	require.False(t, b.hasKey(t, "events.deleted"), "the marker goes last")
	require.NotEmpty(t, b.tableKeys(t, "live"))

	ao := auditOptions{globalOptions: quiet(), Location: ledgerURI, StorageOptions: b.opts.StorageOptions, Output: "json", Since: 30 * day}
	ao.setClock(b.clock, t0.Add(3*day+time.Minute))
	out.Reset()
	require.NoError(t, runAudit(ctx, ao, &out))
	var rows []map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &rows), out.String())
	require.Len(t, rows, 1, out.String())
	require.Equal(t, "events", rows[0]["table"])
	require.Equal(t, "purged", rows[0]["action"])
	require.True(t, strings.HasPrefix(rows[0]["root"].(string), "gs://"), "root %v", rows[0]["root"])
	require.NotContains(t, out.String(), "disable_oauth", "the ledger never carries storage options")
}
