package objstoretest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
)

// This file owns the Azure Blob Storage test server: Azurite (npm), started
// once per test binary on a free 127.0.0.1 port like versitygw, a fresh
// container per test.

// Environment variables that steer the Azure test server.
const (
	// EnvAzurite names the azurite-blob executable to start.
	EnvAzurite = "REAPER_AZURITE"
	// EnvRequireAzure=1 (or CI=true) turns "no Azure test server" from a
	// skip into a failure.
	EnvRequireAzure = "REAPER_REQUIRE_AZURE"
)

// AzuriteAccount and AzuriteKey are Azurite's well-known development
// account: published by Microsoft, valid only against an emulator, and
// what LanceDB's azure_storage_use_emulator=true signs in with.
const (
	AzuriteAccount = "devstoreaccount1"
	AzuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// AzureServer is one test's view of the Azure test server, with a container
// of its own, created empty for this test.
type AzureServer struct {
	// Endpoint is the server's address, e.g. http://127.0.0.1:41234
	// (Azurite's AZURITE_BLOB_STORAGE_URL).
	Endpoint  string
	Account   string
	Key       string
	Container string
	// Client is signed in to the account, for setup and checks that must
	// bypass the store under test.
	Client *azblob.Client
}

// AccountURL is the blob service URL of the account (path-style, as
// Azurite serves it).
func (s AzureServer) AccountURL() string { return s.Endpoint + "/" + s.Account }

// Options are the Lance storage options that reach this server.
func (s AzureServer) Options() map[string]string {
	return map[string]string{
		"azure_storage_account_name": s.Account,
		"azure_storage_account_key":  s.Key,
		"azure_storage_endpoint":     s.AccountURL(),
		"allow_http":                 "true",
	}
}

// URI is the az:// root URI of the test's container under prefix.
func (s AzureServer) URI(prefix string) string {
	if prefix = strings.Trim(prefix, "/"); prefix == "" {
		return "az://" + s.Container
	}
	return "az://" + s.Container + "/" + prefix
}

// createContainer creates the test's container, again after a transport
// error: the harness's client retries nothing (tests count requests), and
// an Azurite busy with every package's tests at once has reset a connection
// of this first request. An answer from Azurite is final.
func createContainer(ctx context.Context, c *azblob.Client, name string) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		_, err = c.CreateContainer(ctx, name, nil)
		var re *azcore.ResponseError
		if err == nil || errors.As(err, &re) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// azProc is the Azurite process shared by every test in the process.
type azProc struct {
	*proc
	endpoint string
	client   *azblob.Client
}

var azServer = &shared[*azProc]{what: "Azure test server", envRequire: EnvRequireAzure, start: startAzurite, stop: func(p *azProc) { p.proc.stop() }}

// Azure returns the shared Azurite server with a fresh container for this
// test. Without azurite-blob the test is skipped, or failed when
// REAPER_REQUIRE_AZURE=1 or CI=true. Main stops it.
func Azure(t testing.TB) AzureServer {
	t.Helper()
	p := azServer.get(t)
	name := "reaper-test-" + randomHex(8)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := createContainer(ctx, p.client, name); err != nil {
		t.Fatalf("objstoretest: create test container: %v", err)
	}
	// Azurite's cost per request grows with the blobs it holds in all
	// containers, so each test removes its own.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := p.client.DeleteContainer(ctx, name, nil); err != nil {
			t.Logf("objstoretest: delete test container %s: %v", name, err)
		}
	})
	return AzureServer{Endpoint: p.endpoint, Account: AzuriteAccount, Key: AzuriteKey, Container: name, Client: p.client}
}

// StopAzure stops the Azurite process Azure started, if any, and removes
// its data. Later calls to Azure fail.
func StopAzure() { azServer.close() }

// AzuriteKeepAlive is how many seconds the Azurite that Azure starts keeps
// an idle connection open.
const AzuriteKeepAlive = 600

func startAzurite() (*azProc, string, error) {
	bin, why := findTool(EnvAzurite, "azurite-blob", "run scripts/install-azurite.sh")
	if bin == "" {
		return nil, why, nil
	}
	p, err := launchRetrying(func() (*azProc, error) { return launchAzurite(bin) })
	return p, "", err
}

func launchAzurite(bin string) (*azProc, error) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	host, port, _ := strings.Cut(addr, ":")
	dir, err := tempDataDir("azurite")
	if err != nil {
		return nil, err
	}
	p := &azProc{endpoint: "http://" + addr}
	// In memory (tests' data is throwaway, and disk persistence makes a
	// 1000-blob batch five times slower); the data dir is only its working
	// directory, so nothing it writes lands in the caller's. Idle
	// connections are kept longer than any client keeps them (Go: 90 s):
	// with Azurite's default of 5 s, a PUT sent on a connection the server
	// was closing at that instant failed with "connection reset by peer" or
	// a broken pipe (Go retries only idempotent requests on a dead reused
	// connection), a race real Azure, which keeps idle connections for
	// minutes, does not run. The flag needs scripts/azurite/blob.js, which
	// install-azurite.sh links as azurite-blob: Azurite's own entry point
	// ignores it (TestAzuriteKeepsIdleConnections).
	p.proc, err = startProc("azurite", bin, addr, []string{"--blobHost", host, "--blobPort", port,
		"--blobKeepAliveTimeout", strconv.Itoa(AzuriteKeepAlive),
		"--skipApiVersionCheck", "--loose", "--silent", "--disableProductStyleUrl",
		"--disableTelemetry", "--inMemoryPersistence"}, nil, dir, 30*time.Second, listening)
	if err != nil {
		return nil, err
	}
	cred, err := azblob.NewSharedKeyCredential(AzuriteAccount, AzuriteKey)
	if err != nil {
		p.proc.stop()
		return nil, fmt.Errorf("azurite credential: %w", err)
	}
	opts := &azblob.ClientOptions{}
	opts.Retry = policy.RetryOptions{MaxRetries: -1}
	opts.Transport = &http.Client{}
	p.client, err = azblob.NewClientWithSharedKeyCredential(p.endpoint+"/"+AzuriteAccount, cred, opts)
	if err != nil {
		p.proc.stop()
		return nil, fmt.Errorf("azurite client: %w", err)
	}
	return p, nil
}
