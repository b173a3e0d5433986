package objstore

import (
	"errors"
	"net"
	"net/url"
	"syscall"
)

// ErrMisconfigured marks a store error that only the operator can fix, in
// the root's storage options or the environment: no or rejected
// credentials, the wrong region, an endpoint that cannot be reached, a
// missing bucket or directory, access denied. Backends return it as a
// *MisconfiguredError; the CLI prints its one line and exits 2.
var ErrMisconfigured = errors.New("store misconfigured")

// MisconfiguredError says in one line what is wrong and what to set. The
// backend's own error stays in the chain (errors.Is/As, retry
// classification, debug logs) but not in the message: an SDK chain such as
// "get identity: get credentials: failed to refresh cached credentials, no
// EC2 IMDS role found, ..." tells an operator less than the fix does.
type MisconfiguredError struct {
	// Problem is what is wrong ("no AWS credentials found"), Fix what to
	// set ("set AWS_PROFILE or ..."). Neither holds a secret.
	Problem, Fix string
	// Err is the backend's error.
	Err error
}

func (e *MisconfiguredError) Error() string { return e.Problem + "; " + e.Fix }

// Unwrap reports ErrMisconfigured and the backend's error.
func (e *MisconfiguredError) Unwrap() []error { return []error{ErrMisconfigured, e.Err} }

// Unreachable reports a request that never reached the server: the host
// does not resolve, nothing listens on the port, or nothing answered the
// connect within DialTimeout (a firewall dropping it). host is the endpoint
// as scheme://host[:port] when the error names it; why is "" for any other
// error. Every HTTP backend maps it to a MisconfiguredError naming its own
// endpoint setting.
func Unreachable(err error) (host, why string) {
	var dns *net.DNSError
	var slow *DialTimeoutError
	switch {
	case errors.As(err, &dns) && dns.IsNotFound:
		why = "no such host"
	case errors.Is(err, syscall.ECONNREFUSED):
		why = "connection refused"
	case errors.As(err, &slow):
		why = "no answer to a connection within " + slow.Limit.String()
	default:
		return "", ""
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			return u.Scheme + "://" + u.Host, why
		}
	}
	return "(unknown)", why
}

// UnreachableError is err as a MisconfiguredError when it is Unreachable
// (fix names the backend's endpoint setting), else nil.
func UnreachableError(err error, fix string) *MisconfiguredError {
	host, why := Unreachable(err)
	if why == "" {
		return nil
	}
	return &MisconfiguredError{Problem: "cannot reach the endpoint " + host + ": " + why, Fix: fix, Err: err}
}
