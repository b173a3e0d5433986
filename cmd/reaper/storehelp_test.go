package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
)

// `reaper --help` names every root form of every backend, and every
// storage option each documents (its canonical names) with the backend's
// name and its default credentials: a backend added to the registry shows
// up without an edit here.
func TestHelpNamesEveryBackend(t *testing.T) {
	var out bytes.Buffer
	require.Equal(t, 0, execute(context.Background(), []string{"--help"}, &out, io.Discard))
	help := unwrapped(out.String())
	for _, f := range all.Default().Forms() {
		require.Contains(t, help, f.Syntax)
	}
	for _, b := range all.Default().Backends() {
		require.NotEmpty(t, b.Name, "backend %q: help names it by its descriptor's Name", b.Scheme)
		if len(b.Options) == 0 {
			continue
		}
		require.NotEmpty(t, b.DefaultCredentials, "backend %q: help says where its credentials come from without options", b.Scheme)
		require.Contains(t, help, b.Name, "backend %q", b.Scheme)
		require.Contains(t, help, b.DefaultCredentials, "backend %q", b.Scheme)
		for _, o := range b.Options {
			if o.AliasOf == "" {
				require.Contains(t, help, o.Name, "backend %q", b.Scheme)
			}
		}
	}
}

// Every --root and --location of every command lists every root form, and
// every --storage-option names every form whose roots take options.
func TestFlagHelpNamesEveryForm(t *testing.T) {
	reg := all.Default()
	var optionPrefixes []string
	for _, b := range reg.Backends() {
		for _, f := range b.Forms {
			if len(b.Options) > 0 {
				optionPrefixes = append(optionPrefixes, f.Prefix)
			}
		}
	}
	seen := map[string]int{}
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		for _, name := range []string{"root", "location", "storage-option"} {
			f := c.Flags().Lookup(name)
			if f == nil || (name == "root" && c.Name() == "audit") {
				continue // audit's --root keeps the ledger's rows of a root: it opens none
			}
			seen[name]++
			want := objstore.Syntaxes(reg.Forms())
			if name == "storage-option" {
				want = optionPrefixes
			}
			for _, w := range want {
				require.Contains(t, f.Usage, w, "%s --%s", c.CommandPath(), name)
			}
		}
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(newRootCmd(io.Discard, io.Discard))
	require.GreaterOrEqual(t, seen["root"], 6, "the commands that open a root")
	require.Equal(t, 1, seen["location"], "reaper audit")
	require.Equal(t, seen["root"]+seen["location"], seen["storage-option"])
}

// storesHelp renders whatever the registry holds: a backend registered
// there is in the help with its forms and options, none of it written here.
func TestStoresHelpFollowsTheRegistry(t *testing.T) {
	r := all.NewRegistry()
	open := func(context.Context, objstore.Location, map[string]string, objstore.OpenEnv) (objstore.Store, error) {
		return nil, nil
	}
	require.NoError(t, r.Register(objstore.Backend{
		Scheme: "x", Forms: []objstore.URIForm{objstore.BucketForm("x")}, Name: "X Storage", Open: open,
		Options:            []objstore.StorageOption{{Name: "x_key", Secret: true}, {Name: "x_region"}, {Name: "x_zone", AliasOf: "x_region"}},
		DefaultCredentials: "the X chain",
	}))
	require.Equal(t, `Roots (--root): x://bucket/prefix. A relative path such as ./data is made
absolute before it is opened.

Storage options (repeated --storage-option key=value, with Lance's names;
secret values are never printed):
  x:// (X Storage): x_key (secret), x_region; without them, the X chain.`, storesHelp(r))
}

// unwrapped joins help's wrapped lines, so a phrase broken across lines
// is found.
func unwrapped(s string) string { return strings.Join(strings.Fields(s), " ") }
