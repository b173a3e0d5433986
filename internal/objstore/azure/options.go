package azure

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Storage option names, as Lance forwards them to the object_store crate
// (AzureConfigKey). Aliases object_store also accepts map to one of these.
const (
	OptAccountName       = "azure_storage_account_name"
	OptAccountKey        = "azure_storage_account_key"
	OptSASKey            = "azure_storage_sas_key"
	OptClientID          = "azure_client_id"
	OptClientSecret      = "azure_client_secret"
	OptTenantID          = "azure_tenant_id"
	OptFederatedToken    = "azure_federated_token_file"
	OptUseEmulator       = "azure_storage_use_emulator"
	OptEndpoint          = "azure_storage_endpoint"
	OptAllowHTTP         = "allow_http"
	envAccountName       = "AZURE_STORAGE_ACCOUNT_NAME"
	envAzuriteURL        = "AZURITE_BLOB_STORAGE_URL"
	defaultAzuriteURL    = "http://127.0.0.1:10000"
	emulatorAccount      = "devstoreaccount1"
	emulatorAccountKey   = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	publicBlobHostSuffix = ".blob.core.windows.net"
)

// aliases are the other spellings object_store accepts for the same keys.
var aliases = map[string]string{
	"azure_storage_access_key":    OptAccountKey,
	"azure_storage_master_key":    OptAccountKey,
	"azure_storage_sas_token":     OptSASKey,
	"azure_storage_client_id":     OptClientID,
	"azure_storage_client_secret": OptClientSecret,
	"azure_storage_tenant_id":     OptTenantID,
	"azure_storage_authority_id":  OptTenantID,
	"azure_authority_id":          OptTenantID,
	"azure_endpoint":              OptEndpoint,
}

// secret are the canonical names whose values never reach logs or errors.
var secret = []string{OptAccountKey, OptSASKey, OptClientSecret}

// storageOptions is the one table of accepted names (aliases included), in
// the order errors list them, the secret ones marked.
func storageOptions() []objstore.StorageOption {
	names := []string{OptAllowHTTP, OptClientID, OptClientSecret, OptFederatedToken, OptAccountKey,
		OptAccountName, OptEndpoint, OptSASKey, OptUseEmulator, OptTenantID}
	for a := range aliases {
		names = append(names, a)
	}
	slices.Sort(names)
	out := make([]objstore.StorageOption, len(names))
	for i, n := range names {
		out[i] = objstore.StorageOption{Name: n, Secret: slices.Contains(secret, canonical(n)), AliasOf: aliases[n]}
	}
	return out
}

func canonical(name string) string {
	if c, ok := aliases[name]; ok {
		return c
	}
	return name
}

// Options are the parsed storage options. With no credential option the
// store signs in through azidentity's DefaultAzureCredential (environment,
// AKS workload identity, managed identity, Azure CLI).
type Options struct {
	AccountName  string
	AccountKey   string
	SASKey       string
	ClientID     string
	ClientSecret string
	TenantID     string
	// FederatedTokenFile selects workload identity with a token file (AKS
	// sets AZURE_FEDERATED_TOKEN_FILE itself; DefaultAzureCredential reads it).
	FederatedTokenFile string
	// UseEmulator points at Azurite the way object_store does: the account
	// devstoreaccount1 and its published key unless given, at
	// $AZURITE_BLOB_STORAGE_URL (default http://127.0.0.1:10000).
	UseEmulator bool
	// Endpoint is the account's blob service URL (object_store's
	// azure_storage_endpoint), e.g. https://acct.blob.core.windows.net.
	Endpoint  string
	AllowHTTP bool
}

// String hides the secrets so Options can be logged or printed with %v.
func (o Options) String() string {
	redact := func(s string) string {
		if s == "" {
			return ""
		}
		return "REDACTED"
	}
	return fmt.Sprintf("{AccountName:%s AccountKey:%s SASKey:%s ClientID:%s ClientSecret:%s TenantID:%s FederatedTokenFile:%s UseEmulator:%t Endpoint:%s AllowHTTP:%t}",
		o.AccountName, redact(o.AccountKey), redact(o.SASKey), o.ClientID, redact(o.ClientSecret), o.TenantID,
		o.FederatedTokenFile, o.UseEmulator, o.Endpoint, o.AllowHTTP)
}

// GoString hides the secrets from %#v too.
func (o Options) GoString() string { return "azure.Options" + o.String() }

// ParseOptions validates storage options strictly: unknown names, two
// spellings of one option, malformed booleans and endpoints, more than one
// credential, and half a service principal are errors. Values of secret
// options never appear in errors.
func ParseOptions(m map[string]string) (Options, error) {
	var o Options
	given, err := objstore.ParseStorageOptions(m, map[string]objstore.OptionTarget{
		OptAccountName:    {String: &o.AccountName},
		OptAccountKey:     {String: &o.AccountKey},
		OptSASKey:         {String: &o.SASKey},
		OptClientID:       {String: &o.ClientID},
		OptClientSecret:   {String: &o.ClientSecret},
		OptTenantID:       {String: &o.TenantID},
		OptFederatedToken: {String: &o.FederatedTokenFile},
		OptEndpoint:       {String: &o.Endpoint},
		OptUseEmulator:    {Bool: &o.UseEmulator},
		OptAllowHTTP:      {Bool: &o.AllowHTTP},
	}, canonical, Backend().OptionNames)
	if err != nil {
		return Options{}, err
	}
	return o, o.validate(given)
}

func (o Options) validate(given map[string]string) error {
	var creds []string
	for _, c := range []string{OptAccountKey, OptSASKey, OptClientSecret, OptFederatedToken} {
		if k, ok := given[c]; ok {
			creds = append(creds, k)
		}
	}
	if len(creds) > 1 {
		return fmt.Errorf("storage options %s: give one credential (account key, SAS, client secret or federated token file)", strings.Join(creds, " and "))
	}
	if o.ClientSecret != "" && (o.ClientID == "" || o.TenantID == "") {
		return fmt.Errorf("storage option %s needs %s and %s", given[OptClientSecret], OptClientID, OptTenantID)
	}
	if o.SASKey != "" {
		if _, err := url.ParseQuery(strings.TrimPrefix(o.SASKey, "?")); err != nil {
			return fmt.Errorf("storage option %s: not a SAS query string (sv=...&sig=...)", given[OptSASKey])
		}
	}
	if o.UseEmulator && o.Endpoint != "" {
		return fmt.Errorf("storage options %s=true and %s: object_store ignores the endpoint under the emulator; set %s=http://host:port instead, or drop %s", OptUseEmulator, given[OptEndpoint], envAzuriteURL, OptUseEmulator)
	}
	if o.Endpoint == "" {
		return nil
	}
	u, err := url.Parse(o.Endpoint)
	if err != nil {
		// The parse error quotes the URL, which may hold a SAS.
		return fmt.Errorf("storage option %s: not a URL; want http(s)://host[:port][/account]", given[OptEndpoint])
	}
	if u.User != nil || u.RawQuery != "" {
		return fmt.Errorf("storage option %s: credentials or a query in the URL are not accepted; use %s or %s", given[OptEndpoint], OptAccountKey, OptSASKey)
	}
	if u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("storage option %s=%q: want http(s)://host[:port][/account]", given[OptEndpoint], o.Endpoint)
	}
	if u.Scheme == "http" && !o.AllowHTTP {
		return fmt.Errorf("storage option %s=%q is plain http: pass %s=true to allow it", given[OptEndpoint], o.Endpoint, OptAllowHTTP)
	}
	return nil
}
