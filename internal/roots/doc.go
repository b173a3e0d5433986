// Package roots turns the configuration into the list of database roots a
// pass works on: the configured roots plus every discover pattern expanded
// (Expand), then the share of one replica: its roots (Assign, shard.by
// root), or every root and its share of each root's tables (ShareOf,
// shard.by table).
package roots
