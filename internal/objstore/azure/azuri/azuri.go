// Package azuri reads the Azure backend's root URIs. az://container/prefix
// names the container only; its account comes from the storage options (or
// the environment). abfss://container@account.dfs.core.windows.net/prefix,
// the Data Lake form Lance and object_store accept, names the account in
// the host; reaper reads it as the same blob container (a
// hierarchical-namespace account serves its blob endpoint too).
//
// It is apart from package azure so that the fuzz target of the root-URI
// grammar (internal/objstore) builds without the Azure SDK.
package azuri

import (
	"errors"
	"strings"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Scheme is the Azure backend's, whichever form a root is written in.
const Scheme objstore.Scheme = "az"

// hostSuffixes are the host suffixes an abfss:// root may name, after
// "account.": the public cloud's Data Lake and blob endpoints.
var hostSuffixes = []string{".dfs.core.windows.net", ".blob.core.windows.net"}

// Forms are the Azure backend's root-URI forms.
func Forms() []objstore.URIForm {
	return []objstore.URIForm{
		{Prefix: "az://", Syntax: "az://container/prefix", Parse: parseAZ},
		{Prefix: "abfss://", Syntax: "abfss://container@account.dfs.core.windows.net/prefix", Parse: parseABFSS, UserIsBucket: true},
	}
}

// ABFSS is the Form of a location written
// abfss://container@account.dfs.core.windows.net/prefix: it names the
// account, and renders the location in that form.
type ABFSS struct {
	Account string
}

// URI renders l as abfss://container@account.dfs.core.windows.net/prefix,
// whichever of the accepted hosts it was written with.
func (f ABFSS) URI(l objstore.Location) string {
	s := "abfss://" + l.Bucket + "@" + f.Account + ".dfs.core.windows.net"
	if l.Prefix != "" {
		s += "/" + l.Prefix
	}
	return s
}

// Account is the storage account loc's URI names: "" for an az:// root,
// whose account comes from the storage options.
func Account(loc objstore.Location) string {
	if f, ok := loc.Form.(ABFSS); ok {
		return f.Account
	}
	return ""
}

// split cuts an Azure URI after its scheme into authority and prefix.
func split(uri string) (authority, prefix string, err error) {
	_, rest, _ := strings.Cut(uri, "://")
	authority, prefix, _ = strings.Cut(rest, "/")
	if strings.ContainsAny(authority, "?#") || strings.ContainsAny(prefix, "?#") {
		return "", "", objstore.ErrQuery
	}
	return authority, prefix, nil
}

// parseAZ parses az://container/prefix.
func parseAZ(uri string) (objstore.Location, error) {
	container, prefix, err := split(uri)
	if err != nil {
		return objstore.Location{}, err
	}
	if strings.Contains(container, "@") {
		return objstore.Location{}, errors.New("az:// roots name the container only (az://container/prefix); name the account with azure_storage_account_name, or write abfss://container@account.dfs.core.windows.net/prefix")
	}
	return location(container, prefix, nil)
}

// parseABFSS parses abfss://container@account.dfs.core.windows.net/prefix
// (or account.blob.core.windows.net).
func parseABFSS(uri string) (objstore.Location, error) {
	authority, prefix, err := split(uri)
	if err != nil {
		return objstore.Location{}, err
	}
	container, host, ok := strings.Cut(authority, "@")
	if !ok || container == "" {
		return objstore.Location{}, errors.New("abfss:// roots take the form abfss://container@account.dfs.core.windows.net/prefix")
	}
	account := ""
	for _, suffix := range hostSuffixes {
		if a, found := strings.CutSuffix(host, suffix); found {
			account = a
		}
	}
	if account == "" || strings.ContainsAny(account, ".:@") {
		return objstore.Location{}, errors.New("abfss:// host must be account.dfs.core.windows.net (other clouds and custom endpoints: use az://container/prefix with azure_storage_endpoint)")
	}
	return location(container, prefix, ABFSS{Account: account})
}

func location(container, prefix string, form objstore.LocationForm) (objstore.Location, error) {
	if container == "" {
		return objstore.Location{}, errors.New("missing container")
	}
	prefix, err := objstore.CleanPrefix(prefix)
	if err != nil {
		return objstore.Location{}, err
	}
	return objstore.Location{Scheme: Scheme, Bucket: container, Prefix: prefix, Form: form}, nil
}
