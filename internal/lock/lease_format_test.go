package lock

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.UnixMilli(1_700_000_000_123)
	want := Info{
		Owner: "host/42/abcd", Token: strings.Repeat("ab", 16), Generation: 7,
		TTL: 30 * time.Second, AcquiredAt: at, RenewedAt: at.Add(time.Second), ExpiresAt: at.Add(31 * time.Second),
	}
	body, err := encode(want)
	require.NoError(t, err)
	got, err := Parse(body)
	require.NoError(t, err)
	require.Equal(t, want, got, "round trip: got/want")

	// Two encodings of the same Info differ (nonce): versitygw's ETag is the
	// body's MD5, so equal bodies would make compare-and-swap ambiguous.
	again, err := encode(want)
	require.NoError(t, err)
	require.NotEqual(t, string(body), string(again), "bodies of two writes must differ")

	var raw map[string]any
	require.NoError(t, json.Unmarshal(body, &raw))
	for _, k := range []string{"version", "owner", "token", "generation", "ttl_ms", "acquired_at_ms", "renewed_at_ms", "expires_at_ms", "nonce"} {
		require.Contains(t, raw, k, "body %s", body)
	}
	require.NotContains(t, string(body), " ", "body is compact JSON")
}

func TestParseAcceptsUnknownKeys(t *testing.T) {
	t.Parallel()
	body := `{"version":2,"owner":"o","token":"t","generation":1,"ttl_ms":5000,"acquired_at_ms":1,"renewed_at_ms":2,"expires_at_ms":3,"future":{"x":1}}`
	info, err := Parse([]byte(body))
	require.NoError(t, err)
	require.Equal(t, "o", info.Owner)
	require.Equal(t, int64(3), info.ExpiresAt.UnixMilli())
	require.Equal(t, 5*time.Second, info.TTL)
}

// TestParseVersion1: an older reaper's lease carries no ttl_ms; its TTL is
// the span it wrote between renewal and expiry.
func TestParseVersion1(t *testing.T) {
	t.Parallel()
	body := `{"version":1,"owner":"o","token":"t","generation":1,"acquired_at_ms":1,"renewed_at_ms":1000,"expires_at_ms":121000}`
	info, err := Parse([]byte(body))
	require.NoError(t, err)
	require.Equal(t, 2*time.Minute, info.TTL)
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	const full = `"owner":"o","token":"t","generation":1,"acquired_at_ms":1,"renewed_at_ms":2,"expires_at_ms":3`
	tests := []struct {
		name, body, wantErr string
	}{
		{"garbage", "not json", "parse lease"},
		{"empty", "", "parse lease"},
		{"array", "[1]", "parse lease"},
		{"empty object", "{}", "missing field(s) [version owner token generation acquired_at_ms renewed_at_ms expires_at_ms]"},
		{"version 2 without ttl", `{"version":2,` + full + `}`, "missing field(s) [ttl_ms]"},
		{"zero ttl", `{"version":2,"ttl_ms":0,` + full + `}`, "ttl 0ms is not positive"},
		{"version 1 with no span", `{"version":1,"owner":"o","token":"t","generation":1,"acquired_at_ms":1,"renewed_at_ms":3,"expires_at_ms":3}`, "ttl 0ms is not positive"},
		{"no version", `{` + full + `}`, "missing field(s) [version]"},
		{"no token", `{"version":1,"owner":"o","generation":1,"acquired_at_ms":1,"renewed_at_ms":2,"expires_at_ms":3}`, "missing field(s) [token]"},
		{"no expiry", `{"version":1,"owner":"o","token":"t","generation":1,"acquired_at_ms":1,"renewed_at_ms":2}`, "missing field(s) [expires_at_ms]"},
		{"version 3", `{"version":3,"ttl_ms":1,` + full + `}`, "unsupported version 3"},
		{"negative generation", `{"version":1,"owner":"o","token":"t","generation":-1,"acquired_at_ms":1,"renewed_at_ms":2,"expires_at_ms":3}`, "negative generation -1"},
		{"negative expiry", `{"version":1,"owner":"o","token":"t","generation":1,"acquired_at_ms":1,"renewed_at_ms":2,"expires_at_ms":-3}`, "negative expires_at_ms -3"},
		{"fractional number", `{"version":1,"owner":"o","token":"t","generation":1.5,"acquired_at_ms":1,"renewed_at_ms":2,"expires_at_ms":3}`, "parse lease"},
		{"string number", `{"version":1,"owner":"o","token":"t","generation":"1","acquired_at_ms":1,"renewed_at_ms":2,"expires_at_ms":3}`, "parse lease"},
		{"empty owner", `{"version":1,"owner":"","token":"t","generation":1,"acquired_at_ms":1,"renewed_at_ms":2,"expires_at_ms":3}`, "empty owner"},
		{"empty token", `{"version":1,"owner":"o","token":"","generation":1,"acquired_at_ms":1,"renewed_at_ms":2,"expires_at_ms":3}`, "empty token"},
		{"null field", `{"version":1,"owner":null,"token":"t","generation":1,"acquired_at_ms":1,"renewed_at_ms":2,"expires_at_ms":3}`, "missing field(s) [owner]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.body))
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.wantErr, "body %s", tt.body)
		})
	}
}

func TestInfoTakeoverAt(t *testing.T) {
	t.Parallel()
	lm := time.UnixMilli(1_000_000)
	info := Info{TTL: time.Minute}
	require.Equal(t, lm.Add(time.Minute+time.Second), info.TakeoverAt(lm, 0), "TTL plus the store's resolution")
	require.Equal(t, lm.Add(6*time.Minute+time.Second), info.TakeoverAt(lm, 5*time.Minute), "plus the skew allowance")
}
