package objstore

import (
	"fmt"
	"io"
)

// This file owns the read limit of Get: every backend checks the size it
// is told before reading and never reads past limit+1 bytes, so a size the
// server did not declare (or declared wrongly) cannot make it buffer more.

// TooLargeError is Get's refusal of an object larger than the caller's
// limit. It wraps ErrTooLarge.
type TooLargeError struct {
	Key string
	// Size is the object's size, or -1 when the store did not say and the
	// read stopped past the limit.
	Size  int64
	Limit int64
}

func (e *TooLargeError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("get %s: %v: more than %d bytes; not read", e.Key, ErrTooLarge, e.Limit)
	}
	return fmt.Sprintf("get %s: %v: %d bytes, more than %d; not read", e.Key, ErrTooLarge, e.Size, e.Limit)
}

func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// CheckLimit refuses a limit that is not positive: a caller must say how
// large an object it expects.
func CheckLimit(key string, limit int64) error {
	if limit <= 0 {
		return fmt.Errorf("get %s: read limit %d: pass a positive number of bytes", key, limit)
	}
	return nil
}

// ReadLimited reads r, whose object the store declared to be declared bytes
// long (-1: unknown), refusing more than limit bytes with a *TooLargeError
// before reading anything when the declared size is already too large.
func ReadLimited(r io.Reader, key string, declared, limit int64) ([]byte, error) {
	if declared > limit {
		return nil, &TooLargeError{Key: key, Size: declared, Limit: limit}
	}
	body, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > limit {
		return nil, &TooLargeError{Key: key, Size: -1, Limit: limit}
	}
	return body, nil
}
