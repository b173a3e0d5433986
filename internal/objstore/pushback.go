package objstore

// Pushback is implemented by a wrapper that sees the store push back (503
// SlowDown, 429 and the like, as the backend classifies them): Pushbacks
// counts them since the wrapper was made. A caller that adapts its
// concurrency reads it before and after a request.
type Pushback interface {
	Pushbacks() uint64
}

// PushbacksOf returns the Pushbacks counter of s or of the first store it
// wraps (through Unwrap() Store) that has one, or nil: a store that cannot
// push back (a local disk) or a stack without a retry layer.
func PushbacksOf(s Store) func() uint64 {
	for s != nil {
		if p, ok := s.(Pushback); ok {
			return p.Pushbacks
		}
		u, ok := s.(interface{ Unwrap() Store })
		if !ok {
			return nil
		}
		s = u.Unwrap()
	}
	return nil
}
