package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

// A flag given on the command line wins over the config file, even when it
// repeats the built-in default (--default-ttl 7d used to be dropped because
// 7d is reaper.DefaultTTL, so the file's ttl: 1d stayed).
func TestDurationFlagsOverrideTheFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "reaper.yaml")
	require.NoError(t, os.WriteFile(file, []byte("defaults:\n  ttl: 1d\n  skew_allowance: 1m\n"), 0o600))
	for _, tc := range []struct {
		name              string
		args              []string
		wantTTL, wantSkew time.Duration
	}{
		{"no flags: the file", nil, 24 * time.Hour, time.Minute},
		{"the built-in default, given", []string{"--default-ttl", "7d", "--skew-allowance", "5m"}, 7 * 24 * time.Hour, 5 * time.Minute},
		{"another value", []string{"--default-ttl", "2d", "--skew-allowance", "10m"}, 48 * time.Hour, 10 * time.Minute},
		{"days with a fraction", []string{"--default-ttl", "1.5d"}, 36 * time.Hour, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g globalOptions
			fs := pflag.NewFlagSet("reaper", pflag.ContinueOnError)
			g.register(fs)
			require.NoError(t, fs.Parse(tc.args))
			cfg, err := loadConfig(storeOptions{globalOptions: g, Root: dir}, passFlags{ConfigPath: file})
			require.NoError(t, err)
			require.Equal(t, tc.wantTTL, cfg.Defaults.TTL.D(), "defaults.ttl")
			require.Equal(t, tc.wantSkew, cfg.Defaults.SkewAllowance.D(), "defaults.skew_allowance")
		})
	}
}
