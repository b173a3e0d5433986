package objstoretest_test

import (
	"testing"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

func TestMemory(t *testing.T) {
	objstoretest.Run(t, func(*testing.T) objstore.Store { return objstore.NewMemory() })
}

// TestMemorySmallPages crosses page boundaries with few objects.
func TestMemorySmallPages(t *testing.T) {
	objstoretest.Run(t, func(*testing.T) objstore.Store {
		m := objstore.NewMemory()
		m.PageSize = 3
		return m
	}, objstoretest.WithPageSize(3))
}
