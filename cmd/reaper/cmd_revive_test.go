package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRevive(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		b.writeTable(t, "orders", time.Now().Add(-time.Hour))
		var out bytes.Buffer
		require.NoError(t, runDrop(ctx, dropOptions{storeOptions: b.opts, Names: []string{"orders"}}, &out))
		require.True(t, b.hasKey(t, "orders.deleted"))
		data := b.tableKeys(t, "orders")

		tests := []struct {
			name    string
			names   []string
			wantErr bool
			want    string
		}{
			{"soft-deleted", []string{"orders"}, false, "orders: revived"},
			{"live", []string{"orders"}, true, "orders: not revived: it is live already (no marker orders.deleted); nothing to undo\n"},
			{"unknown", []string{"nope"}, true, "nope: not revived: not found"},
		}
		for _, tc := range tests {
			out.Reset()
			err := runRevive(ctx, reviveOptions{storeOptions: b.opts, Names: tc.names}, &out)
			if tc.wantErr {
				require.Equal(t, exitFailed, exitCode(err), "%s: got %v", tc.name, err)
			} else {
				require.NoError(t, err, tc.name)
			}
			require.Contains(t, out.String(), tc.want, tc.name)
		}
		require.False(t, b.hasKey(t, "orders.deleted"))
		require.Equal(t, data, b.tableKeys(t, "orders"), "revive must not touch data")

		out.Reset()
		require.NoError(t, runStatus(ctx, statusOptions{storeOptions: b.opts, Output: "json", Names: []string{"orders"}}, &out))
		require.Contains(t, out.String(), `"state": "exists"`)
	})
}
