package worker

import (
	"sync"

	"github.com/lance-reaper/reaper/internal/lifecycle"
)

// This file owns what a long-running process (reaper run: one Worker, pass
// after pass) remembers of each live table between passes: the memo its
// last plan with nothing to do left (lifecycle/retain_idle.go), so that an
// idle table costs the next pass one listing of its _versions/, or none,
// instead of a read of every manifest. A one-shot pass starts with none.

// memoVersions bounds the manifests the memos keep (compact, a few
// hundred bytes a version once read) for reading a changed table again;
// past it a memo keeps its times and fingerprints alone.
const memoVersions = 100_000

// memos are a Worker's memos by root and table.
type memos struct {
	mu       sync.Mutex
	byTable  map[string]*lifecycle.IdleMemo
	versions int
}

func memoKey(root, table string) string { return root + "\x00" + table }

// get returns the memo of a table, or nil.
func (m *memos) get(root, table string) *lifecycle.IdleMemo {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byTable[memoKey(root, table)]
}

// put keeps a table's memo (nil forgets it).
func (m *memos) put(root, table string, memo *lifecycle.IdleMemo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byTable == nil {
		m.byTable = map[string]*lifecycle.IdleMemo{}
	}
	key := memoKey(root, table)
	if old := m.byTable[key]; old != nil {
		m.versions -= old.Versions()
	}
	if memo == nil {
		delete(m.byTable, key)
		return
	}
	if m.versions+memo.Versions() > memoVersions {
		memo.DropManifests()
	}
	m.versions += memo.Versions()
	m.byTable[key] = memo
}

// keepOnly forgets the memos of root's tables not in live: dropped,
// purged or gone since.
func (m *memos) keepOnly(root string, live []liveTable) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.byTable) == 0 {
		return
	}
	seen := make(map[string]bool, len(live))
	for _, t := range live {
		seen[memoKey(root, t.name)] = true
	}
	prefix := root + "\x00"
	for key, memo := range m.byTable {
		if len(key) > len(prefix) && key[:len(prefix)] == prefix && !seen[key] {
			m.versions -= memo.Versions()
			delete(m.byTable, key)
		}
	}
}
