// Command reaper-image writes reaper's release image (package
// deploy/image) as an OCI image layout, and pushes it when asked. `make
// image` builds the binaries with make build's flags and runs it.
//
//	reaper-image --binary linux/amd64=var/image/reaper-linux-amd64 \
//	  --binary linux/arm64=var/image/reaper-linux-arm64 \
//	  --version v1.2.3 --out var/image/oci [--push ghcr.io/you/reaper:v1.2.3]
//
// A push authenticates like docker and crane: ~/.docker/config.json and its
// credential helpers (`docker login`, `crane auth login`).
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/lance-reaper/reaper/deploy/image"
)

type binaries map[string]string

func (b binaries) String() string { return fmt.Sprint(map[string]string(b)) }

func (b binaries) Set(v string) error {
	p, file, ok := strings.Cut(v, "=")
	if !ok || p == "" || file == "" {
		return fmt.Errorf("want <os>/<arch>=<path>, as in linux/amd64=var/image/reaper-linux-amd64")
	}
	if _, dup := b[p]; dup {
		return fmt.Errorf("platform %s given twice", p)
	}
	b[p] = file
	return nil
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "reaper-image:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("reaper-image", flag.ContinueOnError)
	bins := binaries{}
	fs.Var(bins, "binary", "platform=path of a static reaper binary; repeat per platform")
	out := fs.String("out", "var/image/oci", "directory the OCI image layout is written to (replaced)")
	push := fs.String("push", "", "also push the index to this reference, e.g. ghcr.io/you/reaper:v1.2.3")
	version := fs.String("version", "dev", "org.opencontainers.image.version")
	revision := fs.String("revision", "", "org.opencontainers.image.revision (the commit)")
	source := fs.String("source", "https://github.com/lance-reaper/reaper", "org.opencontainers.image.source")
	epoch := fs.String("source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"),
		"creation time and file mtimes, Unix seconds (default $SOURCE_DATE_EPOCH, else 0): the same binaries and epoch give the same digest")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: every input is a flag (--binary, --out, --push)", fs.Arg(0))
	}
	var created time.Time
	if *epoch != "" {
		s, err := strconv.ParseInt(*epoch, 10, 64)
		if err != nil {
			return fmt.Errorf("--source-date-epoch %q: want Unix seconds, such as $(git log -1 --format=%%ct)", *epoch)
		}
		created = time.Unix(s, 0).UTC()
	} else {
		created = time.Unix(0, 0).UTC()
	}
	var ref name.Reference
	if *push != "" {
		var err error
		if ref, err = name.ParseReference(*push); err != nil {
			return fmt.Errorf("--push %q: %w", *push, err)
		}
	}
	idx, err := image.Build(image.Options{
		Binaries: bins, Version: *version, Revision: *revision, Source: *source, Created: created,
	})
	if err != nil {
		return err
	}
	if err := image.WriteLayout(*out, *version, idx); err != nil {
		return fmt.Errorf("write %s: %w", *out, err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s (index %s)\n", *out, digest)
	if ref != nil {
		if err := remote.WriteIndex(ref, idx, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return fmt.Errorf("push %s: %w", ref, err)
		}
		fmt.Printf("pushed %s@%s\n", ref.Context(), digest)
	}
	return nil
}
