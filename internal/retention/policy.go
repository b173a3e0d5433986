// Package retention plans what removing a Lance table's old versions frees,
// file for file as Lance's own cleanup (cleanup_old_versions) would, from a
// table read by internal/lance. It plans only: it never deletes. The rules
// and where reaper is stricter than Lance are in docs/RETENTION.md.
package retention

import (
	"errors"
	"fmt"
	"time"
)

// Defaults of a Policy, owned here so that configuration and flags read them.
const (
	// DefaultKeepVersions: the newest version is always kept.
	DefaultKeepVersions = 1
	// DefaultUnverifiedAfter is Lance's UNVERIFIED_THRESHOLD_DAYS: a file no
	// manifest references may belong to a write in progress until it is
	// this old.
	DefaultUnverifiedAfter = 7 * 24 * time.Hour
)

// Policy says which versions of a table to remove.
type Policy struct {
	// OlderThan removes versions written more than this long before the
	// plan's now. Exactly one of OlderThan and Before is set.
	OlderThan time.Duration
	// Before removes versions written before this instant.
	Before time.Time
	// KeepVersions always keeps the newest N versions; 0 means
	// DefaultKeepVersions.
	KeepVersions int
	// DeleteUnverified deletes files no manifest references whatever their
	// age: only safe when nothing writes to the table.
	DeleteUnverified bool
	// UnverifiedAfter is the age from which a file no manifest references
	// is deleted without DeleteUnverified; 0 means DefaultUnverifiedAfter.
	UnverifiedAfter time.Duration
}

// ErrInvalidPolicy is a policy that cannot be planned.
var ErrInvalidPolicy = errors.New("invalid retention policy")

// Validate checks the policy and names the field to fix.
func (p Policy) Validate() error {
	switch {
	case p.OlderThan == 0 && p.Before.IsZero():
		return fmt.Errorf("%w: set older_than (a duration) or before (an instant)", ErrInvalidPolicy)
	case p.OlderThan != 0 && !p.Before.IsZero():
		return fmt.Errorf("%w: older_than %v and before %v are both set; set one", ErrInvalidPolicy, p.OlderThan, p.Before)
	case p.OlderThan < 0:
		return fmt.Errorf("%w: older_than %v is negative", ErrInvalidPolicy, p.OlderThan)
	case p.KeepVersions < 0:
		return fmt.Errorf("%w: keep_versions %d is negative; 1 keeps the newest version", ErrInvalidPolicy, p.KeepVersions)
	case p.UnverifiedAfter < 0:
		return fmt.Errorf("%w: unverified_after %v is negative", ErrInvalidPolicy, p.UnverifiedAfter)
	}
	return nil
}

// ErrBelowFloor is a policy that would delete what is younger than the
// floor (safety.min_ttl) it was checked against: a cutoff or an
// unverified_after of seconds is far more often a slip ("7" for 7 days, a
// mistyped unit) than an intent, and a removed version cannot come back.
var ErrBelowFloor = errors.New("below safety.min_ttl")

// CheckFloor refuses a policy that, at now (the store's clock), would
// remove a version written less than floor ago, or delete a file no
// manifest references that is younger than floor (an index build or a
// write in progress). DeleteUnverified is its own explicit choice and is
// not judged here. A floor of 0 allows everything.
func (p Policy) CheckFloor(now time.Time, floor time.Duration) error {
	if floor <= 0 {
		return nil
	}
	if age := now.Sub(p.Cutoff(now)); age < floor {
		what := fmt.Sprintf("older_than %s", p.OlderThan)
		if !p.Before.IsZero() {
			what = fmt.Sprintf("before %s", p.Before.UTC().Format(time.RFC3339Nano))
		}
		if age < 0 {
			return fmt.Errorf("%s is in the future by the store's clock (%s), %w %s: every version but the newest would go", what, now.UTC().Format(time.RFC3339), ErrBelowFloor, floor)
		}
		return fmt.Errorf("%s removes versions written %s ago, %w %s: versions that recent may still be read", what, age.Round(time.Millisecond), ErrBelowFloor, floor)
	}
	if !p.DeleteUnverified && p.unverifiedAfter() < floor {
		return fmt.Errorf("unverified_after %s deletes files no version references from that age, %w %s: an index build or a write in progress is such a file", p.unverifiedAfter(), ErrBelowFloor, floor)
	}
	return nil
}

// Cutoff is the instant versions written before it are removed, given the
// store's clock now.
func (p Policy) Cutoff(now time.Time) time.Time {
	if !p.Before.IsZero() {
		return p.Before
	}
	return now.Add(-p.OlderThan)
}

func (p Policy) keep() int {
	if p.KeepVersions == 0 {
		return DefaultKeepVersions
	}
	return p.KeepVersions
}

func (p Policy) unverifiedAfter() time.Duration {
	if p.UnverifiedAfter == 0 {
		return DefaultUnverifiedAfter
	}
	return p.UnverifiedAfter
}
