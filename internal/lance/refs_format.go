package lance

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Tag is a tag (_refs/tags/<name>.json): a name for one version of one
// branch ("" is main). Lance writes {"branch": null|"<b>", "version": N,
// "createdAt", "updatedAt", "manifestSize", "metadata"}.
type Tag struct {
	Name    string
	Branch  string
	Version uint64
}

// Branch is a branch (_refs/branches/<name>.json) and the versions of its
// own dataset (tree/<name>/_versions/).
type Branch struct {
	Name          string
	ParentBranch  string // "" is main
	ParentVersion uint64
	// RootVersion is the version of main its lineage starts from (the
	// first entry of its identifier's version_mapping): Lance's cleanup of
	// main keeps the files its manifests reference through base paths.
	RootVersion uint64
	Versions    []Version
}

// decodeTag reads a tag file. The version is required and must be a
// non-negative integer; unknown keys are ignored, as Lance's serde does.
func decodeTag(name string, body []byte) (Tag, error) {
	var raw struct {
		Branch  *string      `json:"branch"`
		Version *json.Number `json:"version"`
	}
	if err := strictJSON(body, &raw); err != nil {
		return Tag{}, fmt.Errorf("tag %q: %w", name, err)
	}
	if raw.Version == nil {
		return Tag{}, fmt.Errorf("tag %q: no version", name)
	}
	v, err := uintNumber(*raw.Version)
	if err != nil {
		return Tag{}, fmt.Errorf("tag %q: version: %w", name, err)
	}
	t := Tag{Name: name, Version: v}
	if raw.Branch != nil && *raw.Branch != "main" {
		t.Branch = *raw.Branch
	}
	return t, nil
}

// decodeBranch reads a branch file: {"parentBranch": null|"<b>",
// "identifier": {"version_mapping": [[N, "<uuid>"], ...]}, "parentVersion":
// N, "createAt", "manifestSize", "metadata"}. A branch without an
// identifier (written by an older Lance) is refused: Lance's cleanup would
// not count it as referencing main, and reaper cannot tell which version of
// main it started from.
func decodeBranch(name string, body []byte) (Branch, error) {
	var raw struct {
		ParentBranch  *string      `json:"parentBranch"`
		ParentVersion *json.Number `json:"parentVersion"`
		Identifier    *struct {
			VersionMapping [][]json.RawMessage `json:"version_mapping"`
		} `json:"identifier"`
	}
	if err := strictJSON(body, &raw); err != nil {
		return Branch{}, fmt.Errorf("branch %q: %w", name, err)
	}
	if raw.ParentVersion == nil {
		return Branch{}, fmt.Errorf("branch %q: no parentVersion", name)
	}
	pv, err := uintNumber(*raw.ParentVersion)
	if err != nil {
		return Branch{}, fmt.Errorf("branch %q: parentVersion: %w", name, err)
	}
	if raw.Identifier == nil || len(raw.Identifier.VersionMapping) == 0 {
		return Branch{}, fmt.Errorf("branch %q: no identifier (a branch written by an older Lance)", name)
	}
	first := raw.Identifier.VersionMapping[0]
	var root json.Number
	if len(first) != 2 || json.Unmarshal(first[0], &root) != nil {
		return Branch{}, fmt.Errorf("branch %q: identifier version_mapping[0] is not [version, uuid]", name)
	}
	rv, err := uintNumber(root)
	if err != nil || rv == 0 {
		return Branch{}, fmt.Errorf("branch %q: identifier root version %q is not a positive integer", name, root)
	}
	b := Branch{Name: name, ParentVersion: pv, RootVersion: rv}
	if raw.ParentBranch != nil && *raw.ParentBranch != "main" {
		b.ParentBranch = *raw.ParentBranch
	}
	return b, nil
}

func strictJSON(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON object")
	}
	return nil
}

func uintNumber(n json.Number) (uint64, error) {
	var v uint64
	if _, err := fmt.Sscan(string(n), &v); err != nil || fmt.Sprint(v) != string(n) {
		return 0, fmt.Errorf("%q is not a non-negative integer", n)
	}
	return v, nil
}
