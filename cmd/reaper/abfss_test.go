package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// TestABFSSRoot: a root written abfss://container@account.dfs.core.windows.net/prefix
// is the same Azure root as its az:// form: a drop through the one is seen
// through the other. The container before the "@" is no credential.
func TestABFSSRoot(t *testing.T) {
	r := objstoretest.AzureStore.NewRoot(t)
	b := newBackend(t, r)
	b.writeTable(t, "orders", time.Now().Add(-time.Hour))
	o := b.opts
	o.Root = "abfss://" + r.Azure.Container + "@" + r.Azure.Account + ".dfs.core.windows.net/" + objstoretest.RootPrefix
	o.StorageOptions = []string{"allow_http=true", "azure_storage_account_key=" + r.Azure.Key, "azure_storage_endpoint=" + r.Azure.AccountURL()}

	var out bytes.Buffer
	require.NoError(t, runDrop(context.Background(), dropOptions{storeOptions: o, TTL: 36 * time.Hour, Names: []string{"orders"}}, &out))
	require.Contains(t, out.String(), "orders: dropped (soft-deleted)")
	_, ok := b.get(t, "orders.deleted")
	require.True(t, ok, "the marker is in the az:// root")
}
