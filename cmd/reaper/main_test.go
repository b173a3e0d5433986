package main

import (
	"testing"

	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// TestMain stops the shared S3 test server after the tests.
func TestMain(m *testing.M) { objstoretest.Main(m) }
