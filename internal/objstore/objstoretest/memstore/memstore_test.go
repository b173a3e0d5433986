package memstore_test

import (
	"testing"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
)

func TestConformance(t *testing.T) {
	objstoretest.Run(t, func(*testing.T) objstore.Store { return memstore.New() })
}

// TestConformanceSmallPages crosses page boundaries with few objects.
func TestConformanceSmallPages(t *testing.T) {
	objstoretest.Run(t, func(*testing.T) objstore.Store {
		m := memstore.New()
		m.PageSize = 3
		return m
	}, objstoretest.WithPageSize(3))
}
