package s3

import (
	"regexp"
	"strings"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// The fixes name both places a setting can come from: the root's storage
// option (Lance's name) and the AWS SDK's environment variable.
const (
	fixCredentials = "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), or the storage options aws_access_key_id and aws_secret_access_key"
	fixRejected    = "check the storage options aws_access_key_id, aws_secret_access_key and aws_session_token (or AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE)"
	fixEndpoint    = "check the storage option aws_endpoint (and allow_http=true for http://) or AWS_ENDPOINT_URL_S3, and that the server is up"
)

// expectingRegion finds the region in an AuthorizationHeaderMalformed
// message ("the region 'us-east-1' is wrong; expecting 'eu-west-1'").
var expectingRegion = regexp.MustCompile(`expecting '([a-z0-9-]+)'`)

// misconfigured returns err as an *objstore.MisconfiguredError when an
// operator fixes it in the root's settings — credentials missing or
// rejected, the wrong region, an endpoint that cannot be reached, a missing
// bucket, access denied — and nil otherwise. It owns the mapping of those
// SDK errors to one line naming what to set.
func misconfigured(err error) *objstore.MisconfiguredError {
	me := func(problem, fix string) *objstore.MisconfiguredError {
		return &objstore.MisconfiguredError{Problem: problem, Fix: fix, Err: err}
	}
	code, status := errorCode(err), httpStatus(err)
	switch code {
	case "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken", "InvalidClientTokenId", "TokenRefreshRequired",
		"XAdminUserNotFound": // versitygw's InvalidAccessKeyId
		return me("the store rejected the credentials ("+code+")", fixRejected)
	case "AuthorizationHeaderMalformed", "PermanentRedirect", "IllegalLocationConstraintException":
		return me("the bucket is in another region"+regionOf(err), fixRegion(regionOf(err)))
	case "NoSuchBucket":
		return me("the bucket does not exist", "create it, or fix the bucket in the root URI (and aws_endpoint when the server is not AWS)")
	case "AccessDenied", "AllAccessDisabled":
		return me("access denied ("+code+")", "grant these credentials s3:ListBucket, s3:GetObject, s3:PutObject and s3:DeleteObject on the root, or use others ("+fixCredentials+")")
	}
	switch {
	case noCredentials(err):
		// Before the status: an instance metadata endpoint that answers
		// 403 (outside EC2, or IMDS hop limit reached) puts its own status
		// in the SDK's error, which is not the store's answer.
		return me("no AWS credentials found (environment, shared config and profile, web identity, container or instance role)", fixCredentials)
	case status == 301:
		return me("the bucket is in another region"+regionOf(err), fixRegion(regionOf(err)))
	case status == 403 && code == "":
		return me("access denied (403)", "grant these credentials access to the root, or use others ("+fixCredentials+")")
	}
	if me := objstore.UnreachableError(err, fixEndpoint); me != nil {
		return me
	}
	return nil
}

// noCredentials recognises the SDK failing to find credentials before it
// sends anything. The SDK has no type for it, only its wording: "get
// identity: get credentials: failed to refresh cached credentials, ...".
func noCredentials(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "get identity: ") || strings.Contains(msg, "failed to refresh cached credentials") ||
		strings.Contains(msg, "static credentials are empty")
}

// regionOf finds the bucket's region in the answer: the x-amz-bucket-region
// header, or the AuthorizationHeaderMalformed message.
func regionOf(err error) string {
	if re := responseError(err); re != nil && re.Response != nil {
		if r := re.Response.Header.Get("X-Amz-Bucket-Region"); r != "" {
			return " (" + r + ")"
		}
	}
	if m := expectingRegion.FindStringSubmatch(err.Error()); m != nil {
		return " (" + m[1] + ")"
	}
	return ""
}

func fixRegion(region string) string {
	r := strings.Trim(region, " ()")
	if r == "" {
		r = "<the bucket's region>"
	}
	return "set the storage option aws_region=" + r + " or AWS_REGION=" + r
}
