package lance

import (
	"context"
	"net/url"
	"slices"
	"strings"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// readRefs reads the tags and the branches, and each branch's manifests.
func (t *Table) readRefs(ctx context.Context, store objstore.Store) error {
	tags, err := walk(ctx, store, t.Dir, tagsDir)
	if err != nil {
		return err
	}
	defer func() { t.RefsListed = slices.Concat(t.RefsListed, tags) }() // after the branches: ListRefs' order
	for _, o := range tags {
		// Lance lists one level and takes the names ending in .json.
		name, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, tagsDir), ".json")
		if !ok || strings.Contains(name, "/") {
			continue
		}
		body, err := get(ctx, store, t.Dir+o.Key, maxRefBytes)
		if err != nil {
			return err
		}
		tag, err := decodeTag(name, body)
		if err != nil {
			return unsupportedf("%s: %v", o.Key, err)
		}
		t.Tags = append(t.Tags, tag)
	}
	branches, err := walk(ctx, store, t.Dir, branchesDir)
	if err != nil {
		return err
	}
	t.RefsListed = branches
	for _, o := range branches {
		// Lance lists the folder recursively: a name may hold "/", stored
		// nested or escaped as %2F.
		rel, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, branchesDir), ".json")
		if !ok {
			continue
		}
		name, err := url.PathUnescape(rel)
		if err != nil {
			return unsupportedf("%s: branch name: %v", o.Key, err)
		}
		body, err := get(ctx, store, t.Dir+o.Key, maxRefBytes)
		if err != nil {
			return err
		}
		b, err := decodeBranch(name, body)
		if err != nil {
			return unsupportedf("%s: %v", o.Key, err)
		}
		if err := t.readBranchVersions(ctx, store, &b); err != nil {
			return err
		}
		t.Branches = append(t.Branches, b)
	}
	return nil
}

// readBranchVersions reads the manifests of a branch's dataset,
// tree/<name>/_versions/.
func (t *Table) readBranchVersions(ctx context.Context, store objstore.Store, b *Branch) error {
	sub := treeDir + b.Name + "/" + VersionsDir
	objs, err := walk(ctx, store, t.Dir, sub)
	if err != nil {
		return err
	}
	for _, o := range objs {
		kind, n, _ := versionName(strings.TrimPrefix(o.Key, sub))
		switch kind {
		case nameVersion:
			b.Versions = append(b.Versions, Version{Number: n, Key: o.Key, Size: o.Size, LastModified: o.LastModified})
		case nameHint, nameTemp, nameStaging:
		default:
			return unsupportedf("%s: not a manifest name the reader knows in a branch", o.Key)
		}
	}
	return readManifests(ctx, store, t.Dir, b.Versions, nil, nil)
}
