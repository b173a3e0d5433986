package objstore

import "strings"

// This file owns the Azure root-URI forms. az://container/prefix names the
// container only; its account comes from the storage options (or the
// environment). abfss://container@account.dfs.core.windows.net/prefix, the
// Data Lake form Lance and object_store accept, names the account in the
// host; reaper reads it as the same blob container (a hierarchical-namespace
// account serves its blob endpoint too).

// azureHostSuffixes are the host suffixes an abfss:// root may name, after
// "account.": the public cloud's Data Lake and blob endpoints.
var azureHostSuffixes = []string{".dfs.core.windows.net", ".blob.core.windows.net"}

// parseAzure parses an az:// or abfss:// root; why is empty on success.
func parseAzure(uri string) (Location, string) {
	scheme, rest, _ := strings.Cut(uri, "://")
	authority, prefix, _ := strings.Cut(rest, "/")
	if strings.ContainsAny(authority, "?#") || strings.ContainsAny(prefix, "?#") {
		return Location{}, "query strings and fragments are not allowed"
	}
	loc := Location{Scheme: SchemeAzure}
	if scheme == "az" {
		if strings.Contains(authority, "@") {
			return Location{}, "az:// roots name the container only (az://container/prefix); name the account with azure_storage_account_name, or write abfss://container@account.dfs.core.windows.net/prefix"
		}
		loc.Bucket = authority
	} else {
		container, host, ok := strings.Cut(authority, "@")
		if !ok || container == "" {
			return Location{}, "abfss:// roots take the form abfss://container@account.dfs.core.windows.net/prefix"
		}
		account := ""
		for _, suffix := range azureHostSuffixes {
			if a, found := strings.CutSuffix(host, suffix); found {
				account = a
			}
		}
		if account == "" || strings.ContainsAny(account, ".:@") {
			return Location{}, "abfss:// host must be account.dfs.core.windows.net (other clouds and custom endpoints: use az://container/prefix with azure_storage_endpoint)"
		}
		loc.Bucket, loc.Account = container, account
	}
	if loc.Bucket == "" {
		return Location{}, "missing container"
	}
	loc.Prefix = strings.Trim(prefix, "/")
	if loc.Prefix != "" {
		if err := ValidateKey(loc.Prefix); err != nil {
			return Location{}, "prefix has an empty, \".\" or \"..\" segment"
		}
	}
	return loc, ""
}

// azureString renders an Azure location in the form it was given: abfss://
// when the URI named the account, az:// otherwise.
func azureString(l Location) string {
	s := "az://" + l.Bucket
	if l.Account != "" {
		s = "abfss://" + l.Bucket + "@" + l.Account + ".dfs.core.windows.net"
	}
	if l.Prefix != "" {
		s += "/" + l.Prefix
	}
	return s
}
