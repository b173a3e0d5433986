package lock

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// formatVersion is the lease body version this package writes. Version 2
// carries ttl_ms, which contenders need: the takeover rule is the store's
// LastModified of the lease plus its TTL, not a time any host wrote. A
// version 1 body (an older reaper) is still read, its TTL being
// expires_at_ms - renewed_at_ms; an older reaper reads a version 2 body as
// unreadable and never takes it over, so a mixed rollout fails closed.
const formatVersion = 2

// MaxLeaseBytes caps a lease read: a body this package writes is about 300
// bytes, so anything near the cap is not a lease of reaper's, and a
// multi-GB object at a lease key must cost no memory (it reads as
// unreadable: the lease fails closed, held by nobody who can be named).
const MaxLeaseBytes = 16 << 10

// Info is the content of one lease body, plus the store's LastModified of
// the object it was read from.
type Info struct {
	// Owner names the holder, by default "<host>/<pid>/<random>".
	Owner string
	// Token is 32 random hex digits chosen at acquisition; it identifies one
	// holding of the lease and survives renewals.
	Token string
	// Generation starts at 1 and is bumped on each takeover of an expired
	// lease: a fencing token.
	Generation int64
	// TTL is how long the lease lasts after its last write, by the store's
	// clock.
	TTL time.Duration
	// AcquiredAt, RenewedAt and ExpiresAt are the holder's estimates of the
	// store's clock, for operators; no decision reads them.
	AcquiredAt time.Time
	RenewedAt  time.Time
	ExpiresAt  time.Time
	// Modified is the store's LastModified of the lease when it was read
	// (zero for a lease this process wrote and did not read back).
	Modified time.Time
}

// neverAfter is how far out a takeover may lie and still be reported as a
// time: a lease whose TTL is centuries (hand-written, or a saturated
// TakeoverAt) is never taken over, and saying "from 2318" or printing the
// holder's own expires_at_ms (0: "1970") would mislead.
const neverAfter = 100 * 365 * 24 * time.Hour

// TakeoverNever reports whether the lease read with LastModified lm can
// never be taken over (see TakeoverAt).
func (i Info) TakeoverNever(lm time.Time, skew time.Duration) bool {
	return i.TakeoverAt(lm, skew).Sub(lm) >= neverAfter
}

// TakeoverAt is the earliest store time at which a contender may take over
// the lease read with LastModified lm: a whole TTL after its last write,
// plus the store's time resolution (LastModified may be truncated) and the
// skew allowance (the store's nodes and the holder's clock rate may be off
// by that much). The holder stopped mutating Margin before lm + TTL.
func (i Info) TakeoverAt(lm time.Time, skew time.Duration) time.Time {
	const maxDuration = time.Duration(1<<63 - 1)
	d := objstore.TimeResolution
	for _, x := range []time.Duration{i.TTL, skew} {
		if x > maxDuration-d {
			return lm.Add(maxDuration) // a lease of centuries is never taken over
		}
		d += x
	}
	return lm.Add(d)
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
	TTLMS        *int64  `json:"ttl_ms,omitempty"`
	AcquiredAtMS *int64  `json:"acquired_at_ms"`
	RenewedAtMS  *int64  `json:"renewed_at_ms"`
	ExpiresAtMS  *int64  `json:"expires_at_ms"`
	Nonce        string  `json:"nonce,omitempty"`
}

// Parse decodes and validates a lease body. It is strict about what the
// protocol depends on (version 1 or 2, every field present, non-negative
// numbers, a positive TTL, a non-empty owner and token) and tolerates
// unknown keys so a later writer may add fields.
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
	if b.Version != nil && *b.Version >= 2 {
		check("ttl_ms", b.TTLMS != nil)
	}
	check("acquired_at_ms", b.AcquiredAtMS != nil)
	check("renewed_at_ms", b.RenewedAtMS != nil)
	check("expires_at_ms", b.ExpiresAtMS != nil)
	if len(missing) > 0 {
		return Info{}, fmt.Errorf("parse lease: missing field(s) %v", missing)
	}
	if *b.Version != 1 && *b.Version != formatVersion {
		return Info{}, fmt.Errorf("parse lease: unsupported version %d (want 1 or %d)", *b.Version, formatVersion)
	}
	if *b.Owner == "" {
		return Info{}, errors.New("parse lease: empty owner")
	}
	if *b.Token == "" {
		return Info{}, errors.New("parse lease: empty token")
	}
	fields := []struct {
		name string
		v    int64
	}{
		{"generation", *b.Generation},
		{"acquired_at_ms", *b.AcquiredAtMS},
		{"renewed_at_ms", *b.RenewedAtMS},
		{"expires_at_ms", *b.ExpiresAtMS},
	}
	if b.TTLMS != nil {
		fields = append(fields, struct {
			name string
			v    int64
		}{"ttl_ms", *b.TTLMS})
	}
	for _, f := range fields {
		if f.v < 0 {
			return Info{}, fmt.Errorf("parse lease: negative %s %d", f.name, f.v)
		}
	}
	ttl := *b.ExpiresAtMS - *b.RenewedAtMS // version 1
	if b.TTLMS != nil {
		ttl = *b.TTLMS
	}
	if ttl <= 0 {
		return Info{}, fmt.Errorf("parse lease: ttl %dms is not positive", ttl)
	}
	const maxTTLMs = int64(1<<63-1) / int64(time.Millisecond)
	return Info{
		Owner:      *b.Owner,
		Token:      *b.Token,
		Generation: *b.Generation,
		TTL:        time.Duration(min(ttl, maxTTLMs)) * time.Millisecond,
		AcquiredAt: time.UnixMilli(*b.AcquiredAtMS),
		RenewedAt:  time.UnixMilli(*b.RenewedAtMS),
		ExpiresAt:  time.UnixMilli(*b.ExpiresAtMS),
	}, nil
}

// encode renders info as a compact version 2 lease body with a fresh nonce.
func encode(info Info) ([]byte, error) {
	version := formatVersion
	acquired, renewed, expires := info.AcquiredAt.UnixMilli(), info.RenewedAt.UnixMilli(), info.ExpiresAt.UnixMilli()
	ttl := info.TTL.Milliseconds()
	nonce, err := randomHex(8)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(leaseBody{
		Version:      &version,
		Owner:        &info.Owner,
		Token:        &info.Token,
		Generation:   &info.Generation,
		TTLMS:        &ttl,
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
