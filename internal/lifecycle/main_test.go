//go:build !fuzzonly

package lifecycle

import (
	"testing"

	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

func TestMain(m *testing.M) { objstoretest.Main(m) }
