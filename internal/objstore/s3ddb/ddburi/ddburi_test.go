package ddburi_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/s3ddb/ddburi"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		uri, bucket, prefix, table, canon string
	}{
		{"s3+ddb://lake/db?ddbTableName=lance", "lake", "db", "lance", ""},
		{"s3+ddb://lake/a/b/?ddbTableName=my-table.v1", "lake", "a/b", "my-table.v1", "s3+ddb://lake/a/b?ddbTableName=my-table.v1"},
		{"s3+ddb://lake?ddbTableName=T_1", "lake", "", "T_1", ""},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			loc, err := objstore.ParseLocation(tc.uri, ddburi.Forms())
			require.NoError(t, err)
			require.Equal(t, ddburi.Scheme, loc.Scheme)
			require.Equal(t, tc.bucket, loc.Bucket)
			require.Equal(t, tc.prefix, loc.Prefix)
			require.Equal(t, tc.table, ddburi.Table(loc))
			canon := tc.canon
			if canon == "" {
				canon = tc.uri
			}
			require.Equal(t, canon, loc.String())
			require.Equal(t, objstore.Location{Scheme: "s3", Bucket: tc.bucket, Prefix: tc.prefix}, ddburi.S3(loc))
			// A child (a discovered database) keeps the table.
			require.Equal(t, "s3+ddb://"+tc.bucket+"/"+loc.Child("x").Prefix+"?ddbTableName="+tc.table, loc.Child("x").String())
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ uri, want string }{
		{"s3+ddb://lake/db", "missing ?ddbTableName"},
		{"s3+ddb://lake/db?ddbTableName=", "not a DynamoDB table name"},
		{"s3+ddb://lake/db?ddbTableName=ab", "not a DynamoDB table name"},
		{"s3+ddb://lake/db?ddbTableName=a%20b", "not a DynamoDB table name"},
		{"s3+ddb://lake/db?table=lance", "exactly one query parameter"},
		{"s3+ddb://lake/db?ddbTableName=lance&x=1", "exactly one query parameter"},
		{"s3+ddb://lake/db?ddbTableName=lance#f", "exactly one query parameter"},
		{"s3+ddb:///db?ddbTableName=lance", "missing bucket"},
		{"s3+ddb://lake/a/../b?ddbTableName=lance", "segment"},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			_, err := objstore.ParseLocation(tc.uri, ddburi.Forms())
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, "accepted forms: s3+ddb://bucket/prefix?ddbTableName=T")
		})
	}
}

func TestParseOptions(t *testing.T) {
	o, err := ddburi.ParseOptions(map[string]string{"aws_region": "eu-west-1", "dynamodb_endpoint": "http://127.0.0.1:8000", "allow_http": "true"})
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:8000", o.Endpoint)
	require.Equal(t, "eu-west-1", o.S3.Region)

	for _, tc := range []struct {
		name    string
		options map[string]string
		want    string
	}{
		{"unknown", map[string]string{"dynamo_endpoint": "x"}, `unknown storage option "dynamo_endpoint" (accepted: allow_http, aws_access_key_id, aws_endpoint, aws_region, aws_secret_access_key, aws_session_token, aws_virtual_hosted_style_request, dynamodb_endpoint)`},
		{"http without allow_http", map[string]string{"dynamodb_endpoint": "http://127.0.0.1:8000"}, "allow_http=true"},
		{"not a URL", map[string]string{"dynamodb_endpoint": "localhost:8000"}, "want http(s)://host[:port]"},
		{"credentials", map[string]string{"dynamodb_endpoint": "https://u:s3cr3t@h"}, "credentials in the URL"},
		{"s3 rule", map[string]string{"aws_access_key_id": "a"}, "must be given together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ddburi.ParseOptions(tc.options)
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "s3cr3t")
		})
	}
}

func TestBaseURI(t *testing.T) {
	for _, tc := range []struct{ prefix, table, want string }{
		{"db", "x.lance", "db/x.lance"},
		{"", "x.lance", "x.lance"},
		{"a/b", "x.lance/", "a/b/x.lance"},
	} {
		got, err := ddburi.BaseURI(tc.prefix, tc.table)
		require.NoError(t, err)
		require.Equal(t, tc.want, got)
	}
	_, err := ddburi.BaseURI("db", "/")
	require.Error(t, err)
}
