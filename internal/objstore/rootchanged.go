package objstore

import "fmt"

// RootChangedError is a store's refusal to act through a root that names
// another directory than the one it opened: reaper acts only on the root
// it checked, so a purge never follows a repointed path into a live
// database of the same layout.
type RootChangedError struct {
	// Root is the root as configured (a path).
	Root string
	// Was and Now describe what the root named when the store was opened
	// and what it names now ("directory dev 0:40 inode 12", "nothing").
	Was, Now string
}

func (e *RootChangedError) Error() string {
	return fmt.Sprintf("%v: %s named %s when this pass opened it and names %s now "+
		"(a symbolic link repointed, or the directory moved or swapped with mv): nothing was done through the new path; "+
		"a table this pass had in progress stays as it was in the directory first opened, and the next pass opens %s afresh "+
		"(to finish the old directory, run reaper purge with its own path as --root)",
		ErrRootChanged, e.Root, e.Was, e.Now, e.Root)
}

// Unwrap makes errors.Is(err, ErrRootChanged) hold.
func (e *RootChangedError) Unwrap() error { return ErrRootChanged }
