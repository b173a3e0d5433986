package lifecycle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
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
// optional. Both must be non-negative integers that fit int64, each given
// once: Lance's serde refuses a repeated field, and picking one of two
// clocks would be a guess (a repeated unknown key is ignored, as there);
// for the same reason a key that is a field in another case is refused.
// Anything else is an error wrapping ErrInvalidMarker, and the table is
// never deleted.
func ParseMarker(body []byte) (Marker, error) {
	raw, err := decodeObject(body)
	if err != nil {
		return Marker{}, fmt.Errorf("%w: %w", ErrInvalidMarker, err)
	}
	var m Marker
	v, ok := raw["deleted_at_ms"]
	if !ok {
		return Marker{}, fmt.Errorf("%w: missing deleted_at_ms", ErrInvalidMarker)
	}
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

// markerKeys are the fields a marker may not repeat.
var markerKeys = map[string]bool{"deleted_at_ms": true, "ttl_ms": true}

// caseVariant is the marker field key spells in another case ("" when
// none): Lance's serde ignores such a key, Go's encoding/json takes it for
// the field, so two readers would disagree on the clock; refused.
func caseVariant(key string) string {
	for field := range markerKeys {
		if key != field && strings.EqualFold(key, field) {
			return field
		}
	}
	return ""
}

// decodeObject reads exactly one JSON object, its values left raw. It
// refuses a repeated marker field and anything after the closing brace but
// whitespace.
func decodeObject(body []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	raw := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("not a JSON object: %v", err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("not a JSON object")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("not a JSON object: %v", err)
		}
		if _, dup := raw[key]; dup && markerKeys[key] {
			return nil, fmt.Errorf("key %q appears twice", key)
		}
		if field := caseVariant(key); field != "" {
			return nil, fmt.Errorf("key %q is %q in another case: readers that match keys without case (Go's encoding/json) would take it for that field", key, field)
		}
		raw[key] = v
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, fmt.Errorf("not a JSON object: unterminated")
	}
	// The decoder stops after the object: check the rest is whitespace.
	if len(bytes.TrimSpace(body[dec.InputOffset():])) > 0 {
		return nil, fmt.Errorf("trailing data after the JSON object")
	}
	return raw, nil
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
