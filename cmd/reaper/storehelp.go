package main

import (
	"strings"

	"github.com/lance-reaper/reaper/internal/objstore/all"
)

// This file owns the help text about roots and storage options. It is
// rendered from the backend registry (all.Default), never written by hand:
// a backend added there shows in `reaper --help` and in every --root,
// --location and --storage-option line (storehelp_test.go checks it).

// helpWidth is where help paragraphs wrap.
const helpWidth = 78

// storesHelp is the part of `reaper --help` about roots: their forms, and
// for each backend that takes storage options, their names and where
// credentials come from without them.
func storesHelp(r *all.Registry) string {
	var b strings.Builder
	b.WriteString(wrap("Roots (--root): "+r.FormList()+". A relative path such as ./data is made absolute before it is opened.", "", ""))
	b.WriteString("\n\nStorage options (repeated --storage-option key=value, with Lance's names;\nsecret values are never printed):")
	for _, be := range r.Backends() {
		opts := all.CanonicalOptions(be)
		if len(opts) == 0 {
			continue
		}
		names := make([]string, len(opts))
		for i, o := range opts {
			names[i] = o.Name
			if o.Secret {
				names[i] += " (secret)"
			}
		}
		prefixes := make([]string, len(be.Forms))
		for i, f := range be.Forms {
			prefixes[i] = f.Prefix
		}
		line := strings.Join(prefixes, ", ") + " (" + be.Name + "): " + strings.Join(names, ", ")
		if be.DefaultCredentials != "" {
			line += "; without them, " + be.DefaultCredentials
		}
		b.WriteString("\n" + wrap(line+".", "  ", "    "))
	}
	return b.String()
}

// rootUsage is the --root flag's list of forms.
func rootUsage() string { return all.Default().FormList() }

// storageOptionUsage is the --storage-option flag's help, for roots or
// locations (what).
func storageOptionUsage(what string) string {
	return "storage option key=value for " + all.Default().OptionForms() + " " + what + ", repeatable (e.g. aws_region=us-east-1)"
}

// wrap breaks text into lines of at most helpWidth, the first indented by
// first, the others by rest. A word longer than a line stands alone.
func wrap(text, first, rest string) string {
	var b strings.Builder
	line := first
	empty := true
	for _, w := range strings.Fields(text) {
		if !empty && len(line)+1+len(w) > helpWidth {
			b.WriteString(line + "\n")
			line, empty = rest, true
		}
		if !empty {
			line += " "
		}
		line += w
		empty = false
	}
	b.WriteString(line)
	return b.String()
}
