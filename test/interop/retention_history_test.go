package interop

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// histOp is one operation of js/retention.mjs (see its header).
type histOp struct {
	Op     string `json:"op"`
	From   int    `json:"from,omitempty"`
	To     int    `json:"to,omitempty"`
	Where  string `json:"where,omitempty"`
	Value  string `json:"value,omitempty"`
	Column string `json:"column,omitempty"`
	Type   string `json:"type,omitempty"`
	Tag    string `json:"tag,omitempty"`
	Back   int    `json:"back,omitempty"`
	Branch string `json:"branch,omitempty"`
	What   string `json:"what,omitempty"`
}

// history is one table's seeded history.
type history struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Dir is the table's local path, for orphan operations ("" on an
	// object store, where the history has none).
	Dir string   `json:"dir,omitempty"`
	Ops []histOp `json:"ops"`
}

// histState is what the generator knows of the table it writes, so that
// every operation it draws is valid: the ids used, the tags and branches
// made.
type histState struct {
	rng      *rand.Rand
	kind     string
	next     int // the next unused id
	tags     []string
	branches int
	columns  int
	ops      int  // operations so far
	orphans  bool // the history may plant orphan files (a local root)
}

// genHistory draws a history of 8 to 27 operations after the create, from
// seed: appends, deletes, updates, merge-inserts, overwrites, column
// changes, index builds and optimizations, tags made and deleted, restores
// of an older version, branches, and, when dir is set (a local root),
// orphan files as failed writes leave them.
func genHistory(seed uint64, name, dir string) history {
	s := &histState{rng: rand.New(rand.NewPCG(seed, 0x5eed)), kind: "plain", orphans: dir != ""}
	if s.rng.IntN(3) == 0 {
		s.kind = "vectors"
	}
	first := 50 + s.rng.IntN(300)
	h := history{Name: name, Kind: s.kind, Dir: dir, Ops: []histOp{{Op: "create", From: 0, To: first}}}
	s.next = first
	for range 8 + s.rng.IntN(20) {
		h.Ops = append(h.Ops, s.draw())
	}
	return h
}

// draw picks the next operation; weights favour the writes that make most
// of the files (appends, deletes, updates).
func (s *histState) draw() histOp {
	s.ops++
	for {
		switch w := s.rng.IntN(100); {
		case w < 18:
			return s.add()
		case w < 30:
			return histOp{Op: "delete", Where: s.predicate()}
		case w < 38:
			return histOp{Op: "update", Where: s.predicate(), Value: fmt.Sprintf("'u%d'", s.ops)}
		case w < 46:
			lo := s.rng.IntN(s.next)
			hi := s.next + 1 + s.rng.IntN(40)
			s.next = hi
			return histOp{Op: "merge", From: lo, To: hi}
		case w < 49:
			lo := s.next
			s.next += 20 + s.rng.IntN(200)
			return histOp{Op: "overwrite", From: lo, To: s.next}
		case w < 54:
			return histOp{Op: "add_column", Column: s.column()}
		case w < 57:
			return histOp{Op: "rename_column", Column: s.column()}
		case w < 60:
			return histOp{Op: "drop_column", Column: s.column()}
		case w < 70:
			return s.index()
		case w < 76:
			return histOp{Op: "optimize"}
		case w < 83:
			s.tags = append(s.tags, fmt.Sprintf("t%d", s.ops))
			return histOp{Op: "tag", Tag: s.tags[len(s.tags)-1], Back: s.rng.IntN(3)}
		case w < 87 && len(s.tags) > 0:
			i := s.rng.IntN(len(s.tags))
			tag := s.tags[i]
			s.tags = slices.Delete(s.tags, i, i+1)
			return histOp{Op: "untag", Tag: tag}
		case w < 93:
			return histOp{Op: "restore", Back: 1 + s.rng.IntN(4)}
		case w < 96 && s.orphans:
			return histOp{Op: "orphan", What: []string{"data", "txn", "deletion", "index", "tmp"}[s.rng.IntN(5)]}
		case w < 100:
			s.branches++
			lo := 100_000*s.branches + s.next
			return histOp{Op: "branch", Branch: fmt.Sprintf("b%d", s.branches), From: lo, To: lo + 1 + s.rng.IntN(30)}
		}
	}
}

// column is a fresh column name.
func (s *histState) column() string {
	s.columns++
	return fmt.Sprintf("x%d", s.columns)
}

func (s *histState) add() histOp {
	lo := s.next
	s.next += 1 + s.rng.IntN(150)
	return histOp{Op: "add", From: lo, To: s.next}
}

// predicate selects some rows: a range of ids or a residue class.
func (s *histState) predicate() string {
	if s.rng.IntN(2) == 0 {
		return fmt.Sprintf("id < %d", s.rng.IntN(s.next+1))
	}
	m := 2 + s.rng.IntN(9)
	return fmt.Sprintf("id %% %d = %d", m, s.rng.IntN(m))
}

func (s *histState) index() histOp {
	switch n := s.rng.IntN(4); {
	case n == 0 && s.kind == "vectors":
		return histOp{Op: "index", Column: "vector", Type: "ivf_flat"}
	case n <= 1:
		return histOp{Op: "index", Column: "id", Type: "btree"}
	default:
		return histOp{Op: "index", Column: "category", Type: "bitmap"}
	}
}
