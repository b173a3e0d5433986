package azure

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/azure/azuri"
)

// Open returns a store over an az location. The account comes from the
// abfss:// URI, azure_storage_account_name, the emulator's default, or
// $AZURE_STORAGE_ACCOUNT_NAME, in that order; the credential from the
// storage options or, without one, DefaultAzureCredential (environment,
// AKS workload identity, managed identity, Azure CLI). The SDK's own
// retries are off: retrying belongs to the wrapper that knows the
// operation (IsTransient). env's transport carries every request, the
// token requests of azidentity credentials too.
func Open(ctx context.Context, loc objstore.Location, options map[string]string, env objstore.OpenEnv) (*Store, error) {
	if loc.Scheme != Scheme {
		return nil, fmt.Errorf("open azure store: %s is not an az:// root", loc)
	}
	o, err := ParseOptions(options)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", loc, err)
	}
	s := &Store{loc: loc, clock: &objstore.DateClock{}}
	if loc.Prefix != "" {
		s.root = loc.Prefix + "/"
	}
	s.client, err = newClient(o, loc, env.Transport, s.clock)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", loc, err)
	}
	return s, nil
}

// newClient builds the container client: URL, credential, pipeline.
func newClient(o Options, loc objstore.Location, rt http.RoundTripper, c *objstore.DateClock) (*container.Client, error) {
	account, err := accountName(o, loc)
	if err != nil {
		return nil, err
	}
	service, err := serviceURL(o, account)
	if err != nil {
		return nil, err
	}
	containerURL := service + "/" + url.PathEscape(loc.Bucket)
	var transport policy.Transporter
	if rt != nil {
		transport = &http.Client{Transport: rt}
	}
	copts := &container.ClientOptions{}
	copts.Retry = policy.RetryOptions{MaxRetries: -1}
	copts.Transport = transport
	copts.PerRetryPolicies = []policy.Policy{clockPolicy{c}}
	copts.InsecureAllowCredentialWithHTTP = o.AllowHTTP || o.UseEmulator

	key := o.AccountKey
	if key == "" && o.UseEmulator && o.SASKey == "" && o.ClientSecret == "" && o.FederatedTokenFile == "" {
		key = emulatorAccountKey
	}
	switch {
	case key != "":
		cred, err := container.NewSharedKeyCredential(account, key)
		if err != nil {
			// The SDK's message may quote the key; name the option only.
			return nil, fmt.Errorf("storage option %s: not a base64 account key", OptAccountKey)
		}
		return container.NewClientWithSharedKeyCredential(containerURL, cred, copts)
	case o.SASKey != "":
		return container.NewClientWithNoCredential(containerURL+"?"+strings.TrimPrefix(o.SASKey, "?"), copts)
	}
	cred, err := tokenCredential(o, transport)
	if err != nil {
		return nil, err
	}
	return container.NewClient(containerURL, cred, copts)
}

// tokenCredential is the Microsoft Entra ID credential the options select:
// a service principal secret, a workload identity token file, or
// DefaultAzureCredential.
func tokenCredential(o Options, transport policy.Transporter) (azcore.TokenCredential, error) {
	co := azcore.ClientOptions{Transport: transport}
	switch {
	case o.ClientSecret != "":
		cred, err := azidentity.NewClientSecretCredential(o.TenantID, o.ClientID, o.ClientSecret, &azidentity.ClientSecretCredentialOptions{ClientOptions: co})
		if err != nil {
			return nil, fmt.Errorf("client secret credential (%s, %s): %w", OptClientID, OptTenantID, err)
		}
		return cred, nil
	case o.FederatedTokenFile != "":
		cred, err := azidentity.NewWorkloadIdentityCredential(&azidentity.WorkloadIdentityCredentialOptions{
			ClientOptions: co, ClientID: o.ClientID, TenantID: o.TenantID, TokenFilePath: o.FederatedTokenFile,
		})
		if err != nil {
			return nil, fmt.Errorf("workload identity credential (%s): %w", OptFederatedToken, err)
		}
		return cred, nil
	}
	cred, err := azidentity.NewDefaultAzureCredential(&azidentity.DefaultAzureCredentialOptions{ClientOptions: co, TenantID: o.TenantID})
	if err != nil {
		return nil, fmt.Errorf("no credential in the storage options and DefaultAzureCredential failed (give %s, %s, or %s/%s/%s): %w",
			OptAccountKey, OptSASKey, OptClientID, OptClientSecret, OptTenantID, err)
	}
	return cred, nil
}

// accountName resolves the storage account.
func accountName(o Options, loc objstore.Location) (string, error) {
	named := azuri.Account(loc)
	switch {
	case named != "" && o.AccountName != "" && named != o.AccountName:
		return "", fmt.Errorf("storage option %s=%q names another account than the root URI (%q)", OptAccountName, o.AccountName, named)
	case named != "":
		return named, nil
	case o.AccountName != "":
		return o.AccountName, nil
	case o.UseEmulator:
		return emulatorAccount, nil
	case os.Getenv(envAccountName) != "":
		return os.Getenv(envAccountName), nil
	}
	return "", fmt.Errorf("no storage account: set the storage option %s (or $%s), or write the root as abfss://container@account.dfs.core.windows.net/prefix", OptAccountName, envAccountName)
}

// serviceURL is the account's blob service URL, without a trailing "/".
func serviceURL(o Options, account string) (string, error) {
	switch {
	case o.Endpoint != "":
		return strings.TrimSuffix(o.Endpoint, "/"), nil
	case o.UseEmulator:
		base := os.Getenv(envAzuriteURL)
		if base == "" {
			base = defaultAzuriteURL
		}
		return strings.TrimSuffix(base, "/") + "/" + url.PathEscape(account), nil
	}
	if strings.ContainsAny(account, "/.:?#@") {
		return "", fmt.Errorf("storage account %q: not an account name", account)
	}
	return "https://" + account + publicBlobHostSuffix, nil
}
