package s3_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// TestWireMisconfigured: answers an operator fixes in the root's settings
// become one line saying what to set (objstore.ErrMisconfigured), and keep
// their classification (never retried, never a missing key).
func TestWireMisconfigured(t *testing.T) {
	for _, tc := range []struct {
		status int
		code   string
		region string // x-amz-bucket-region
		want   string
	}{
		{403, "InvalidAccessKeyId", "", "get k: the store rejected the credentials (InvalidAccessKeyId); check the storage options aws_access_key_id, aws_secret_access_key and aws_session_token (or AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE)"},
		{400, "AuthorizationHeaderMalformed", "eu-west-1", "get k: the bucket is in another region (eu-west-1); set the storage option aws_region=eu-west-1 or AWS_REGION=eu-west-1"},
		{301, "PermanentRedirect", "ap-south-1", "get k: the bucket is in another region (ap-south-1); set the storage option aws_region=ap-south-1 or AWS_REGION=ap-south-1"},
		{404, "NoSuchBucket", "", "get k: the bucket does not exist; create it, or fix the bucket in the root URI (and aws_endpoint when the server is not AWS)"},
		{403, "AccessDenied", "", "get k: access denied (AccessDenied); grant these credentials s3:ListBucket, s3:GetObject, s3:PutObject and s3:DeleteObject on the root, or use others (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), or the storage options aws_access_key_id and aws_secret_access_key)"},
	} {
		t.Run(tc.code, func(t *testing.T) {
			st, _, _ := newWireStore(t, func(w http.ResponseWriter, r wireReq) {
				if tc.region != "" {
					w.Header().Set("X-Amz-Bucket-Region", tc.region)
				}
				s3Error(w, tc.status, tc.code)
			})
			_, _, err := st.Get(t.Context(), "k", 1<<20)
			require.EqualError(t, err, tc.want)
			require.ErrorIs(t, err, objstore.ErrMisconfigured)
			var me *objstore.MisconfiguredError
			require.True(t, errors.As(err, &me))
			require.NotErrorIs(t, err, objstore.ErrNotFound)
		})
	}
}
