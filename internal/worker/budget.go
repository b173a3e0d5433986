package worker

import (
	"sync"

	"github.com/lance-reaper/reaper/internal/config"
)

// budget enforces the per-pass limits across roots.
type budget struct {
	mu         sync.Mutex
	maxTables  int
	maxObjects int64
	tables     int
	objects    int64
}

func newBudget(l config.Limits) *budget {
	return &budget{maxTables: l.MaxTablesPerPass, maxObjects: l.MaxObjectsPerPass}
}

// takeTable reserves a table and returns its object budget (0 = unlimited),
// or false when the pass has spent its tables or objects.
func (b *budget) takeTable(perTable int64) (int64, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.maxTables > 0 && b.tables >= b.maxTables {
		return 0, false
	}
	left := int64(0)
	if b.maxObjects > 0 {
		left = b.maxObjects - b.objects
		if left <= 0 {
			return 0, false
		}
	}
	b.tables++
	switch {
	case perTable > 0 && (left == 0 || perTable < left):
		return perTable, true
	default:
		return left, true
	}
}

func (b *budget) spend(objects int64) {
	b.mu.Lock()
	b.objects += objects
	b.mu.Unlock()
}

// objectsLeft reports whether the pass's object budget is not yet spent:
// version retention starts a table only then (a table's retention is not
// split, so it may go past the budget by its own size).
func (b *budget) objectsLeft() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.maxObjects <= 0 || b.objects < b.maxObjects
}
