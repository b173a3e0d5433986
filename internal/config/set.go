package config

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// Set sets one scalar by its dotted yaml key ("limits.table_concurrency")
// from a string, parsed the way the YAML file reads it: durations with
// ParseDuration, booleans with strconv.ParseBool, numbers in decimal.
// REAPER_* variables and command-line flags both go through Set. The key
// "roots" takes a comma-separated list of URIs and replaces the roots
// (without storage options), "discover" likewise the discover patterns; an
// empty value clears the list. Set does not validate ranges: call Validate.
func (c *Config) Set(key, value string) error {
	switch key {
	case "roots":
		c.Roots = splitRoots(value)
		return nil
	case "discover":
		c.Discover = splitRoots(value)
		return nil
	}
	_, m := fields()
	f, ok := m[key]
	if !ok || !f.scalar {
		return fmt.Errorf("config key %q: not a settable key%s", key, didYouMean(key, ScalarKeys()))
	}
	v := reflect.ValueOf(c).Elem().FieldByIndex(f.index)
	if err := setScalar(v, value); err != nil {
		return fmt.Errorf("config key %s = %q: %w", key, value, err)
	}
	if key == "shard.index" {
		c.Shard.indexSet = true
	}
	return nil
}

func setScalar(v reflect.Value, s string) error {
	s = strings.TrimSpace(s)
	switch v.Type() {
	case durationType:
		d, err := ParseDuration(s)
		if err != nil {
			return err
		}
		v.SetInt(int64(d))
		return nil
	case boolPtrType:
		b, err := parseBool(s)
		if err != nil {
			return err
		}
		v.Set(reflect.ValueOf(&b)) // a fresh pointer: copies of Config never alias
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := parseBool(s)
		if err != nil {
			return err
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, v.Type().Bits())
		if err != nil {
			return fmt.Errorf("want a whole number")
		}
		v.SetInt(n)
	case reflect.Float64:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("want a number")
		}
		v.SetFloat(x)
	default:
		return fmt.Errorf("type %s cannot be set from a string", v.Type())
	}
	return nil
}

func parseBool(s string) (bool, error) {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("want true or false")
	}
	return b, nil
}

func splitRoots(s string) []Root {
	var out []Root
	for _, u := range strings.Split(s, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, Root{URI: u})
		}
	}
	return out
}
