package objstoretest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file owns the DynamoDB test server of s3+ddb:// roots: dynalite
// (npm, an in-memory DynamoDB), started once per test binary on a free
// 127.0.0.1 port like versitygw, a fresh commit table per test, keyed as
// Lance requires (base_uri S hash, version N range).

// Environment variables that steer the DynamoDB test server.
const (
	// EnvDynalite names the dynalite-server launcher to start
	// (scripts/install-dynalite.sh links it into .tools/bin).
	EnvDynalite = "REAPER_DYNALITE"
	// EnvRequireDDB=1 (or CI=true) turns "no DynamoDB test server" from a
	// skip into a failure.
	EnvRequireDDB = "REAPER_REQUIRE_DDB"
)

// DDBServer is one test's view of the DynamoDB test server, with a commit
// table of its own, created empty for this test.
type DDBServer struct {
	Endpoint string // e.g. http://127.0.0.1:41234
	Table    string
	// Client is signed in to the server, for setup and checks that must
	// bypass the store under test.
	Client *dynamodb.Client
}

// ddbProc is the dynalite process shared by every test in the process.
type ddbProc struct {
	*proc
	endpoint string
	client   *dynamodb.Client
}

var ddbServer = &shared[*ddbProc]{what: "DynamoDB test server", envRequire: EnvRequireDDB, start: startDynalite, stop: func(p *ddbProc) { p.proc.stop() }}

// DDB returns the shared dynalite server with a fresh commit table for
// this test. Without dynalite-server the test is skipped, or failed when
// REAPER_REQUIRE_DDB=1 or CI=true. Main stops it.
func DDB(t testing.TB) DDBServer {
	t.Helper()
	p := ddbServer.get(t)
	name := "reaper-test-" + randomHex(8)
	if err := CreateCommitTable(p.client, name); err != nil {
		t.Fatalf("objstoretest: %v", err)
	}
	return DDBServer{Endpoint: p.endpoint, Table: name, Client: p.client}
}

// CreateCommitTable creates a DynamoDB table keyed as Lance's commit
// tables are: base_uri (S) hash, version (N) range.
func CreateCommitTable(client *dynamodb.Client, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("base_uri"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("version"), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("base_uri"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("version"), KeyType: types.KeyTypeRange},
		},
		BillingMode: types.BillingModePayPerRequest,
	})
	if err != nil {
		return fmt.Errorf("create commit table %s: %w", name, err)
	}
	// dynalite turns a table ACTIVE on its next timer tick, not in the
	// CreateTable answer: a request before that finds no table.
	err = dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 5*time.Millisecond, 50*time.Millisecond
	}).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 30*time.Second)
	if err != nil {
		return fmt.Errorf("wait for commit table %s: %w", name, err)
	}
	return nil
}

// StopDDB stops the dynalite process DDB started, if any. Later calls to
// DDB fail.
func StopDDB() { ddbServer.close() }

func startDynalite() (*ddbProc, string, error) {
	bin, why := findTool(EnvDynalite, "dynalite-server", "run scripts/install-dynalite.sh")
	if bin == "" {
		return nil, why, nil
	}
	p, err := launchRetrying(func() (*ddbProc, error) { return launchDynalite(bin) })
	return p, "", err
}

func launchDynalite(bin string) (*ddbProc, error) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	host, port, _ := strings.Cut(addr, ":")
	dir, err := tempDataDir("dynalite")
	if err != nil {
		return nil, err
	}
	p := &ddbProc{endpoint: "http://" + addr}
	// In memory; the data dir is only its working directory.
	p.proc, err = startProc("dynalite", bin, addr, []string{"--host", host, "--port", port}, nil, dir, 30*time.Second, listening)
	if err != nil {
		return nil, err
	}
	p.client = dynamodb.New(dynamodb.Options{
		BaseEndpoint: aws.String(p.endpoint),
		Region:       "us-east-1",
		// dynalite checks a signature is present, not whose.
		Credentials: credentials.NewStaticCredentialsProvider("reaper-test", "reaper-test", ""),
	})
	return p, nil
}
