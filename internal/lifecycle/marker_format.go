package lifecycle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Marker is the body of <root>/<name>.deleted, the soft-delete record Lance
// writes on drop_table. This file owns its byte format (docs/FORMAT.md).
type Marker struct {
	// DeletedAtMs is the Unix epoch time of the drop in milliseconds, from the
	// dropping process's clock.
	DeletedAtMs int64
	// TTLMs is how long the data is kept after the drop.
	TTLMs int64
	// HasTTL is false when the marker carried no ttl_ms: the configured
	// default TTL applies then.
	HasTTL bool
}

// EncodeMarker writes the compact form with keys in this order, as Lance
// does: {"deleted_at_ms":<int64>,"ttl_ms":<int64>}.
func EncodeMarker(deletedAt time.Time, ttl time.Duration) []byte {
	return fmt.Appendf(nil, `{"deleted_at_ms":%d,"ttl_ms":%d}`, deletedAt.UnixMilli(), ttl.Milliseconds())
}

// ParseMarker reads a marker written by Lance or by reaper: any key order,
// any whitespace, unknown keys ignored. deleted_at_ms is required; ttl_ms is
// optional. Both must be non-negative integers that fit int64. Anything else
// is an error wrapping ErrInvalidMarker, and the table is never deleted.
func ParseMarker(body []byte) (Marker, error) {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return Marker{}, fmt.Errorf("%w: not a JSON object: %v", ErrInvalidMarker, err)
	}
	if raw == nil {
		return Marker{}, fmt.Errorf("%w: not a JSON object", ErrInvalidMarker)
	}
	// dec.More() misses a trailing '}' or ']': check the rest is whitespace.
	if len(bytes.TrimSpace(body[dec.InputOffset():])) > 0 {
		return Marker{}, fmt.Errorf("%w: trailing data after the JSON object", ErrInvalidMarker)
	}
	var m Marker
	v, ok := raw["deleted_at_ms"]
	if !ok {
		return Marker{}, fmt.Errorf("%w: missing deleted_at_ms", ErrInvalidMarker)
	}
	var err error
	if m.DeletedAtMs, err = parseMillis("deleted_at_ms", v); err != nil {
		return Marker{}, err
	}
	if v, ok := raw["ttl_ms"]; ok {
		if m.TTLMs, err = parseMillis("ttl_ms", v); err != nil {
			return Marker{}, err
		}
		m.HasTTL = true
	}
	return m, nil
}

// parseMillis accepts a JSON integer in [0, MaxInt64]. Floats, strings,
// exponents and null are refused rather than guessed at.
func parseMillis(field string, v json.RawMessage) (int64, error) {
	s := string(bytes.TrimSpace(v))
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s is %s, want a non-negative integer of milliseconds", ErrInvalidMarker, field, s)
	}
	if n < 0 {
		return 0, fmt.Errorf("%w: %s is negative (%d)", ErrInvalidMarker, field, n)
	}
	return n, nil
}

// TTL returns the marker's TTL, or def when the marker carries none.
func (m Marker) TTL(def time.Duration) time.Duration {
	if !m.HasTTL {
		return def
	}
	return time.Duration(min(m.TTLMs, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond
}

// DeletedAt is the drop time.
func (m Marker) DeletedAt() time.Time { return time.UnixMilli(m.DeletedAtMs) }

// PurgeAfterMs is deleted_at_ms + ttl_ms, saturating at MaxInt64 instead of
// overflowing (such a table is never due).
func (m Marker) PurgeAfterMs(def time.Duration) int64 {
	ttlMs := def.Milliseconds()
	if m.HasTTL {
		ttlMs = m.TTLMs
	}
	if m.DeletedAtMs > math.MaxInt64-ttlMs {
		return math.MaxInt64
	}
	return m.DeletedAtMs + ttlMs
}

// PurgeAfter is the time from which the table may be purged.
func (m Marker) PurgeAfter(def time.Duration) time.Time {
	return time.UnixMilli(m.PurgeAfterMs(def))
}
