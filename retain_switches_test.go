package reaper_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/lancetest"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/local"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/stack"
)

// PurgeRoots, the Go package's pass, reads every kill switch of the one
// assembly as reaper purge and reaper retain do: with retention on, each
// of dry_run, paused, safety.deletions_enabled (and its old name) and the
// root's PAUSE object leaves the table whole, where the same pass without
// a switch removes old versions of it (cmd/reaper/retain_switches_test.go
// walks the command line's paths).
func TestPurgeRootsHonoursEveryKillSwitch(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings map[string]string
		pause    bool
	}{
		{name: "none"},
		{name: "dry_run", settings: map[string]string{"dry_run": "true"}},
		{name: "paused", settings: map[string]string{"paused": "true"}},
		{name: "deletions_enabled", settings: map[string]string{"safety.deletions_enabled": "false"}},
		{name: "retention_enabled (the old name)", settings: map[string]string{"safety.retention_enabled": "false"}},
		{name: "the root's PAUSE", pause: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			st, err := local.Open(root)
			require.NoError(t, err)
			lancetest.LanceDB(t, st, "events.lance/")
			if tc.pause {
				require.NoError(t, os.MkdirAll(filepath.Join(root, "_reaper"), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(root, "_reaper", "PAUSE"), nil, 0o644))
			}
			settings := map[string]string{"retention.enabled": "true", "retention.older_than": "1h", "retention.keep_versions": "2"}
			for k, v := range tc.settings {
				settings[k] = v
			}
			// The table was written just now: the pass runs with the
			// store's clock two hours ahead.
			clock := objstoretest.NewClock()
			clock.Advance(2 * time.Hour)
			ctx := stack.WithWrapBackend(context.Background(), func(s objstore.Store) objstore.Store { return clock.Wrap(s) })
			before := files(t, st, "events.lance/")
			_, err = reaper.PurgeRoots(ctx, reaper.PassOptions{Roots: []reaper.Root{{URI: root}}, Settings: settings})
			require.NoError(t, err)
			after := files(t, st, "events.lance/")
			if tc.name == "none" {
				require.Less(t, len(after), len(before), "without a switch the pass removes old versions")
				return
			}
			require.Equal(t, before, after, "nothing deleted")
		})
	}
}

// files lists the keys under prefix.
func files(t *testing.T, s objstore.Store, prefix string) []string {
	t.Helper()
	var out []string
	require.NoError(t, s.Walk(context.Background(), prefix, func(objs []objstore.Object) error {
		for _, o := range objs {
			out = append(out, o.Key)
		}
		return nil
	}))
	return out
}
