package objstore

import (
	"fmt"
	"slices"
	"strings"
)

// This file owns how a backend reads its storage options: strictly (an
// unknown name, two spellings of one option or a malformed boolean is an
// error naming the option), in sorted order so that the first error is the
// same every run, and without ever quoting a value that could be secret
// (only booleans are quoted). Each backend then checks the combination
// (validate in its options.go).

// OptionTarget is where one storage option's value goes: set String or
// Bool.
type OptionTarget struct {
	String *string
	Bool   *bool
}

// ParseStorageOptions fills targets (by canonical name) from m. canonical
// maps another spelling object_store accepts to its canonical name (nil:
// names are canonical); accepted lists the names an unknown-name error
// offers. It returns the spelling given for each canonical name, for the
// backend's own errors.
func ParseStorageOptions(m map[string]string, targets map[string]OptionTarget, canonical func(string) string, accepted func() []string) (given map[string]string, err error) {
	given = map[string]string{}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		c := k
		if canonical != nil {
			c = canonical(k)
		}
		if prev, dup := given[c]; dup {
			return nil, fmt.Errorf("storage options %q and %q are the same option: give one", prev, k)
		}
		t, ok := targets[c]
		if !ok {
			return nil, fmt.Errorf("unknown storage option %q (accepted: %s)", k, strings.Join(accepted(), ", "))
		}
		given[c] = k
		switch {
		case t.Bool != nil:
			if *t.Bool, err = ParseBoolOption(k, m[k]); err != nil {
				return nil, err
			}
		case t.String != nil:
			*t.String = m[k]
		}
	}
	return given, nil
}

// ParseBoolOption reads a boolean storage option: true or false (any case),
// or 1 or 0, as object_store takes them.
func ParseBoolOption(key, v string) (bool, error) {
	switch strings.ToLower(v) {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, fmt.Errorf("storage option %s=%q: want true or false", key, v)
}
