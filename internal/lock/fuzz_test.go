package lock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// FuzzParseLease checks the lease reader on any bytes. Seeds live in
// testdata/fuzz/FuzzParseLease. Properties:
//   - it never panics;
//   - an accepted lease has a non-empty owner and token and non-negative
//     generation and times (a rival compares them; a negative or missing
//     field must fail closed instead);
//   - it re-encodes (with a fresh nonce) and re-parses to the same Info, and
//     two encodings differ, so compare-and-swap on an MD5 ETag stays sound;
//   - the TTL is positive, and the takeover time is never before the
//     lease's LastModified plus its TTL (no lease is ever up for takeover
//     early, whatever its times say).
func FuzzParseLease(f *testing.F) {
	f.Add([]byte(`{"version":1,"owner":"h/1/ab","token":"00112233445566778899aabbccddeeff","generation":1,"acquired_at_ms":1,"renewed_at_ms":2,"expires_at_ms":3,"nonce":"x"}`))
	f.Add([]byte(`{"version":2,"owner":"h/1/ab","token":"00112233445566778899aabbccddeeff","generation":1,"ttl_ms":120000,"acquired_at_ms":1,"renewed_at_ms":2,"expires_at_ms":120002,"nonce":"x"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		info, err := Parse(body)
		if err != nil {
			require.Contains(t, err.Error(), "parse lease")
			return
		}
		require.NotEmpty(t, info.Owner)
		require.NotEmpty(t, info.Token)
		require.GreaterOrEqual(t, info.Generation, int64(0))
		for _, ts := range []time.Time{info.AcquiredAt, info.RenewedAt, info.ExpiresAt} {
			require.GreaterOrEqual(t, ts.UnixMilli(), int64(0))
		}

		enc, err := encode(info)
		require.NoError(t, err)
		again, err := Parse(enc)
		require.NoError(t, err, "re-encoded %s", enc)
		require.Equal(t, info, again)
		enc2, err := encode(info)
		require.NoError(t, err)
		require.NotEqual(t, string(enc), string(enc2), "two writes of one lease must differ (nonce)")

		require.Positive(t, info.TTL)
		lm := time.UnixMilli(1_700_000_000_000)
		require.False(t, info.TakeoverAt(lm, 0).Before(lm.Add(info.TTL)), "takeover at %s for ttl %s", info.TakeoverAt(lm, 0), info.TTL)
	})
}
