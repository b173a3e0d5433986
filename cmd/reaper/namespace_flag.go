package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/lance-reaper/reaper"
	"github.com/lance-reaper/reaper/internal/lifecycle"
)

// This file owns --namespace, which every command that takes table names
// accepts: LanceDB names a table in a namespace by its object id, the
// namespace path and the table name joined by "$" ("tenant_a$inner"),
// which a shell expands unless quoted. `--namespace tenant_a inner` names
// the same table; a nested namespace is written with "/" between its
// levels (`--namespace tenant_a/sub deep`).

// namespaceUsage is --namespace's help.
const namespaceUsage = `the LanceDB namespace the NAMEs are tables of, levels separated by "/" (tenant_a, or tenant_a/sub); without it a table in a namespace is named by its object id, quoted for the shell: 'tenant_a$inner'`

// registerNamespace adds --namespace to fs.
func (o *storeOptions) registerNamespace(fs *pflag.FlagSet) {
	fs.StringVar(&o.Namespace, "namespace", "", namespaceUsage)
}

// tableNames checks the names a command was given and returns them as
// reaper takes them: with --namespace, each the object id of that table in
// that namespace. rootOnly refuses a table in a namespace, in one line
// saying why (drop, revive and purge are root-table operations).
func (o storeOptions) tableNames(op string, names []string, rootOnly bool) ([]string, error) {
	if o.Namespace != "" {
		levels := strings.FieldsFunc(o.Namespace, func(r rune) bool { return r == '/' || r == '$' })
		if len(levels) == 0 {
			return nil, usagef("%s: --namespace %q names no namespace: pass its path, levels separated by \"/\" (tenant_a/sub)", op, o.Namespace)
		}
		out := make([]string, len(names))
		for i, n := range names {
			if strings.Contains(n, lifecycle.ObjectIDSep) || lifecycle.IsNamespaced(n) {
				return nil, usagef("%s: %q with --namespace: pass the table's own name (the part after the last \"$\")", op, n)
			}
			out[i] = reaper.JoinObjectID(levels, n)
		}
		names = out
	}
	if err := validateNames(names); err != nil {
		return nil, err
	}
	if rootOnly {
		for _, n := range names {
			if err := lifecycle.RootTableOnly(op, n); err != nil {
				return nil, asUsage(err)
			}
		}
	}
	return names, nil
}
