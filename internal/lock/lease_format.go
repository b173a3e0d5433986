package lock

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// formatVersion is the only lease body version this package reads or writes.
const formatVersion = 1

// Info is the content of one lease body.
type Info struct {
	// Owner names the holder, by default "<host>/<pid>/<random>".
	Owner string
	// Token is 32 random hex digits chosen at acquisition; it identifies one
	// holding of the lease and survives renewals.
	Token string
	// Generation starts at 1 and is bumped on each takeover of an expired
	// lease: a fencing token.
	Generation int64
	// AcquiredAt, RenewedAt and ExpiresAt are wall-clock times with
	// millisecond precision.
	AcquiredAt time.Time
	RenewedAt  time.Time
	ExpiresAt  time.Time
}

// Expired reports whether the lease is over at now: a rival may take it over.
func (i Info) Expired(now time.Time) bool {
	return !now.Before(i.ExpiresAt)
}

// leaseBody is the wire form. Pointers let Parse tell a missing field from a
// zero one. Nonce is fresh on every write because some stores (versitygw)
// derive the ETag from the body's MD5: without it two writes of the same
// fields would share an ETag and a stale compare-and-swap could win.
type leaseBody struct {
	Version      *int    `json:"version"`
	Owner        *string `json:"owner"`
	Token        *string `json:"token"`
	Generation   *int64  `json:"generation"`
	AcquiredAtMS *int64  `json:"acquired_at_ms"`
	RenewedAtMS  *int64  `json:"renewed_at_ms"`
	ExpiresAtMS  *int64  `json:"expires_at_ms"`
	Nonce        string  `json:"nonce,omitempty"`
}

// Parse decodes and validates a lease body. It is strict about what the
// protocol depends on (version 1, every field present, non-negative numbers,
// a non-empty owner and token) and tolerates unknown keys so a later writer
// may add fields.
func Parse(body []byte) (Info, error) {
	var b leaseBody
	if err := json.Unmarshal(body, &b); err != nil {
		return Info{}, fmt.Errorf("parse lease: %w", err)
	}
	var missing []string
	check := func(name string, present bool) {
		if !present {
			missing = append(missing, name)
		}
	}
	check("version", b.Version != nil)
	check("owner", b.Owner != nil)
	check("token", b.Token != nil)
	check("generation", b.Generation != nil)
	check("acquired_at_ms", b.AcquiredAtMS != nil)
	check("renewed_at_ms", b.RenewedAtMS != nil)
	check("expires_at_ms", b.ExpiresAtMS != nil)
	if len(missing) > 0 {
		return Info{}, fmt.Errorf("parse lease: missing field(s) %v", missing)
	}
	if *b.Version != formatVersion {
		return Info{}, fmt.Errorf("parse lease: unsupported version %d (want %d)", *b.Version, formatVersion)
	}
	if *b.Owner == "" {
		return Info{}, errors.New("parse lease: empty owner")
	}
	if *b.Token == "" {
		return Info{}, errors.New("parse lease: empty token")
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"generation", *b.Generation},
		{"acquired_at_ms", *b.AcquiredAtMS},
		{"renewed_at_ms", *b.RenewedAtMS},
		{"expires_at_ms", *b.ExpiresAtMS},
	} {
		if f.v < 0 {
			return Info{}, fmt.Errorf("parse lease: negative %s %d", f.name, f.v)
		}
	}
	return Info{
		Owner:      *b.Owner,
		Token:      *b.Token,
		Generation: *b.Generation,
		AcquiredAt: time.UnixMilli(*b.AcquiredAtMS),
		RenewedAt:  time.UnixMilli(*b.RenewedAtMS),
		ExpiresAt:  time.UnixMilli(*b.ExpiresAtMS),
	}, nil
}

// encode renders info as a compact lease body with a fresh nonce.
func encode(info Info) ([]byte, error) {
	version := formatVersion
	acquired, renewed, expires := info.AcquiredAt.UnixMilli(), info.RenewedAt.UnixMilli(), info.ExpiresAt.UnixMilli()
	nonce, err := randomHex(8)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(leaseBody{
		Version:      &version,
		Owner:        &info.Owner,
		Token:        &info.Token,
		Generation:   &info.Generation,
		AcquiredAtMS: &acquired,
		RenewedAtMS:  &renewed,
		ExpiresAtMS:  &expires,
		Nonce:        nonce,
	})
	if err != nil {
		return nil, fmt.Errorf("encode lease: %w", err)
	}
	return body, nil
}

// randomHex returns n random bytes as 2n hex digits.
func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("read random: %w", err)
	}
	return hex.EncodeToString(b), nil
}
