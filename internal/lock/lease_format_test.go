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
		AcquiredAt: at, RenewedAt: at.Add(time.Second), ExpiresAt: at.Add(31 * time.Second),
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
	for _, k := range []string{"version", "owner", "token", "generation", "acquired_at_ms", "renewed_at_ms", "expires_at_ms", "nonce"} {
		require.Contains(t, raw, k, "body %s", body)
	}
	require.NotContains(t, string(body), " ", "body is compact JSON")
}

func TestParseAcceptsUnknownKeys(t *testing.T) {
	t.Parallel()
	body := `{"version":1,"owner":"o","token":"t","generation":1,"acquired_at_ms":1,"renewed_at_ms":2,"expires_at_ms":3,"future":{"x":1}}`
	info, err := Parse([]byte(body))
	require.NoError(t, err)
	require.Equal(t, "o", info.Owner)
	require.Equal(t, int64(3), info.ExpiresAt.UnixMilli())
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
		{"no version", `{` + full + `}`, "missing field(s) [version]"},
		{"no token", `{"version":1,"owner":"o","generation":1,"acquired_at_ms":1,"renewed_at_ms":2,"expires_at_ms":3}`, "missing field(s) [token]"},
		{"no expiry", `{"version":1,"owner":"o","token":"t","generation":1,"acquired_at_ms":1,"renewed_at_ms":2}`, "missing field(s) [expires_at_ms]"},
		{"version 2", `{"version":2,` + full + `}`, "unsupported version 2"},
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

func TestInfoExpired(t *testing.T) {
	t.Parallel()
	exp := time.UnixMilli(1000)
	info := Info{ExpiresAt: exp}
	require.False(t, info.Expired(exp.Add(-time.Millisecond)))
	require.True(t, info.Expired(exp))
	require.True(t, info.Expired(exp.Add(time.Millisecond)))
}
