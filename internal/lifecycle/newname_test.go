//go:build !fuzzonly

package lifecycle

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A name with a control character or bytes that are not UTF-8 is refused
// for a drop (it would make every report naming it ambiguous), though a
// root holding one is still read.
func TestValidateNewName(t *testing.T) {
	for _, name := range []string{"a\nb", "tab\there", "esc\x1b[2J", "bell\a", "bad\xff", "del\x7f"} {
		require.ErrorIs(t, ValidateNewName(name), ErrInvalidName, "%q", name)
		require.NoError(t, ValidateName(name), "%q is still readable", name)
	}
	for _, name := range []string{"orders", "events.2024-01", "tëst", "my table"} {
		require.NoError(t, ValidateNewName(name), "%q", name)
	}
}

// Drop refuses such a name; status still reads the table.
func TestDropRefusesAControlCharacter(t *testing.T) {
	s := clockMemory()
	ns := newNS(t, s, &clock{})
	lanceTable(t, s, "a\nb", 1)
	_, err := ns.Drop(t.Context(), "a\nb", 0)
	require.ErrorIs(t, err, ErrInvalidName)
	require.Equal(t, StateExists, statusOf(t, ns, "a\nb").State)
}
