package s3

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns exact listed keys. A listing is an XML body, and XML 1.0
// cannot carry every key S3 stores (control characters, bytes that are not
// UTF-8). Listings therefore ask for EncodingType=url: AWS then
// percent-encodes keys and common prefixes (a space as "+"), says so in the
// answer, and the store decodes them; the SDK does not. A server that
// ignores the request (versitygw v1.8.0) sends keys as XML text, where its
// encoder writes U+FFFD for what XML cannot carry: such a key names no
// object, and a purge that deleted it would leave the real one behind for
// good. A listing that holds one fails, naming it.

// exactKeys turns the keys and common prefixes of one listing page into
// the stored keys, in place. A url-encoded page is decoded; in a page the
// server did not encode, a key holding U+FFFD is checked with one HEAD
// (only such keys cost one): if no object has that name, the server
// replaced characters in it and the listing fails.
func (s *Store) exactKeys(ctx context.Context, out *s3.ListObjectsV2Output) error {
	if out.EncodingType == types.EncodingTypeUrl {
		for i := range out.Contents {
			if err := decodeKey(&out.Contents[i].Key); err != nil {
				return err
			}
		}
		for i := range out.CommonPrefixes {
			if err := decodeKey(&out.CommonPrefixes[i].Prefix); err != nil {
				return err
			}
		}
		return nil
	}
	for _, o := range out.Contents {
		if key := aws.ToString(o.Key); strings.ContainsRune(key, utf8.RuneError) {
			if err := s.checkListed(ctx, key); err != nil {
				return err
			}
		}
	}
	return nil
}

// decodeKey decodes one url-encoded key or prefix of a listing.
func decodeKey(p **string) error {
	raw := aws.ToString(*p)
	key, err := url.QueryUnescape(raw)
	if err != nil {
		return fmt.Errorf("decode listed key %q: %w", raw, err)
	}
	*p = aws.String(key)
	return nil
}

// errUnnamable: a listed key names no object; the server replaced
// characters it could not write in XML.
var errUnnamable = errors.New("no object has the key as listed: the server ignores encoding-type=url and wrote U+FFFD for characters XML cannot carry, so the stored key cannot be read from a listing; delete that object by its exact name")

// checkListed heads a listed key (a bucket key) that holds U+FFFD; a key
// that exists is exact.
func (s *Store) checkListed(ctx context.Context, key string) error {
	_, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.loc.Bucket), Key: aws.String(key)}, s.observe(nil))
	switch err = mapError(err); {
	case err == nil:
		return nil
	case errors.Is(err, objstore.ErrNotFound):
		return fmt.Errorf("key %+q: %w", s.rel(key), errUnnamable) // %+q shows the U+FFFD
	default:
		return fmt.Errorf("check listed key %q: %w", s.rel(key), err)
	}
}
