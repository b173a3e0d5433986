package config

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// EnvPrefix starts every environment variable reaper reads.
const EnvPrefix = "REAPER_"

// EnvRoots is the convenience variable holding a comma-separated list of
// root URIs; it replaces the file's roots.
const EnvRoots = EnvPrefix + "ROOTS"

// EnvDiscover holds a comma-separated list of discover patterns; it
// replaces the file's discover list, and an empty value clears it.
const EnvDiscover = EnvPrefix + "DISCOVER"

// EnvJobCompletionIndex is set by Kubernetes Indexed Jobs.
const EnvJobCompletionIndex = "JOB_COMPLETION_INDEX"

// ignoredEnv are REAPER_* variables that belong to the test harnesses, not
// to the configuration; UnknownEnv does not report them.
var ignoredEnv = struct{ names, prefixes []string }{
	names: []string{
		"REAPER_VERSITYGW",     // objstoretest: versitygw binary
		"REAPER_REQUIRE_S3",    // objstoretest: fail instead of skip without S3
		"REAPER_REQUIRE_SPIN",  // model: fail instead of skip without spin
		"REAPER_FAKE_GCS",      // objstoretest: fake-gcs-server binary
		"REAPER_REQUIRE_GCS",   // objstoretest: fail instead of skip without GCS
		"REAPER_AZURITE",       // objstoretest: azurite-blob executable
		"REAPER_REQUIRE_AZURE", // objstoretest: fail instead of skip without Azurite
		"REAPER_DYNALITE",      // objstoretest: dynalite-server launcher (s3+ddb)
		"REAPER_REQUIRE_DDB",   // objstoretest: fail instead of skip without dynalite
		"REAPER_CLOCK_OFFSET",  // cmd/reaper: shifts the wall clock (chaos replicas)
		"REAPER_LOCAL_CHILD",   // objstore/local cross-process test child
		"REAPER_LOCAL_CHILD_ID",
		"REAPER_LOCK_TEST_CHILD", // lock cross-process test child
		"REAPER_REQUIRE_MOUNTS",  // objstoretest: fail instead of skip without a mount namespace
	},
	prefixes: []string{
		"REAPER_TEST_",      // objstoretest: external S3 server
		"REAPER_LOCK_TEST_", // lock cross-process test settings
	},
}

// Load builds the configuration: Default, then the YAML file at path (when
// path is not ""), then REAPER_* variables read through lookupEnv, then
// JOB_COMPLETION_INDEX. Command-line flags come last: the CLI applies them
// with Set (and may call ApplyJobCompletionIndex again after a flag set
// shard.count). Load does not validate; call Validate or ValidateForPass.
//
// lookupEnv cannot list variables, so Load cannot reject a misspelt
// REAPER_* name: use LoadEnviron, which does.
func Load(path string, lookupEnv func(string) (string, bool)) (Config, error) {
	c := Default()
	if path != "" {
		if err := decodeFile(path, &c); err != nil {
			return Config{}, err
		}
	}
	fillNil(&c)
	if lookupEnv == nil {
		lookupEnv = func(string) (string, bool) { return "", false }
	}
	if err := c.applyEnv(lookupEnv); err != nil {
		return Config{}, err
	}
	if err := c.ApplyJobCompletionIndex(lookupEnv); err != nil {
		return Config{}, err
	}
	return c, nil
}

// LoadEnviron is Load with the environment given as os.Environ() returns
// it; it first rejects unknown REAPER_* variables (UnknownEnv).
func LoadEnviron(path string, environ []string) (Config, error) {
	if err := UnknownEnv(environ); err != nil {
		return Config{}, err
	}
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return Load(path, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
}

// EnvNames maps every REAPER_* variable Load reads to its dotted key
// ("roots" for REAPER_ROOTS, "discover" for REAPER_DISCOVER).
func EnvNames() map[string]string {
	m := map[string]string{EnvRoots: "roots", EnvDiscover: "discover"}
	for _, k := range ScalarKeys() {
		m[EnvName(k)] = k
	}
	return m
}

// UnknownEnv returns an error naming each REAPER_* variable in environ that
// Load does not read (a typo would otherwise be silently ignored). Test
// harness variables (REAPER_TEST_*, REAPER_LOCK_TEST_*, REAPER_VERSITYGW,
// REAPER_REQUIRE_S3, REAPER_AZURITE, REAPER_REQUIRE_AZURE, REAPER_LOCAL_CHILD, ...) are ignored.
func UnknownEnv(environ []string) error {
	known := EnvNames()
	names := make([]string, 0, len(known)) // without the prefix, so typos compare on what differs
	for n := range known {
		names = append(names, strings.TrimPrefix(n, EnvPrefix))
	}
	slices.Sort(names)
	var errs []error
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix) || ignoredEnvName(name) {
			continue
		}
		if _, ok := known[name]; !ok {
			hint := "; see config/reaper.yaml for the settings (REAPER_ + the dotted key upper-cased with _ for .)"
			if c := closest(strings.TrimPrefix(name, EnvPrefix), names); c != "" {
				hint = "; did you mean " + EnvPrefix + c + "?"
			}
			errs = append(errs, fmt.Errorf("environment variable %s: not a reaper setting%s", name, hint))
		}
	}
	return errors.Join(errs...)
}

func ignoredEnvName(name string) bool {
	if slices.Contains(ignoredEnv.names, name) {
		return true
	}
	// Kubernetes service links: a Service named "reaper" puts
	// REAPER_SERVICE_HOST, REAPER_SERVICE_PORT*, REAPER_PORT and
	// REAPER_PORT_<port>_TCP* into every pod of its namespace.
	if strings.HasPrefix(name, "REAPER_SERVICE_") || name == "REAPER_PORT" || strings.HasPrefix(name, "REAPER_PORT_") {
		return true
	}
	for _, p := range ignoredEnv.prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func (c *Config) applyEnv(lookupEnv func(string) (string, bool)) error {
	var errs []error
	if v, ok := lookupEnv(EnvRoots); ok {
		c.Roots = splitRoots(v)
	}
	if v, ok := lookupEnv(EnvDiscover); ok {
		c.Discover = splitRoots(v)
	}
	for _, k := range ScalarKeys() {
		name := EnvName(k)
		v, ok := lookupEnv(name)
		if !ok {
			continue
		}
		if err := c.Set(k, v); err != nil {
			errs = append(errs, fmt.Errorf("environment variable %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// ApplyJobCompletionIndex sets shard.index from JOB_COMPLETION_INDEX (set
// by Kubernetes Indexed Jobs) when shard.count > 1 and shard.index was not
// set by the file, REAPER_SHARD_INDEX or Set. Load calls it; calling it
// again after flags is harmless.
func (c *Config) ApplyJobCompletionIndex(lookupEnv func(string) (string, bool)) error {
	if c.Shard.indexSet || c.Shard.Count <= 1 || lookupEnv == nil {
		return nil
	}
	v, ok := lookupEnv(EnvJobCompletionIndex)
	if !ok || v == "" {
		return nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return fmt.Errorf("environment variable %s=%q: want a whole number (Kubernetes sets it for Indexed Jobs); unset it or set shard.index", EnvJobCompletionIndex, v)
	}
	c.Shard.Index = n // not marked as set: Validate checks the range
	return nil
}

// fillNil restores defaults for optional booleans a file set to null.
func fillNil(c *Config) {
	if c.Safety.DeletionsEnabled == nil {
		c.Safety.DeletionsEnabled = boolPtr(true)
	}
	if c.Safety.RetentionEnabled == nil {
		c.Safety.RetentionEnabled = boolPtr(true)
	}
	if c.Metrics.PerRootLabels == nil {
		c.Metrics.PerRootLabels = boolPtr(true)
	}
}
