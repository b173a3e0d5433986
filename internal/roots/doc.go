// Package roots turns the configuration into the list of database roots a
// pass works on: the configured roots plus every discover pattern expanded
// (Expand), then the share of one replica (Assign).
package roots
