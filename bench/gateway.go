package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

const (
	gwAccess = "benchaccess"
	gwSecret = "benchsecret0123456789"
	gwRegion = "us-east-1"
)

// gateway is a versitygw process serving a posix data directory on
// 127.0.0.1, with an access log of every request.
type gateway struct {
	Endpoint  string
	DataDir   string
	AccessLog string
	cmd       *exec.Cmd
	client    *s3.Client
}

func startGateway(ctx context.Context, bin, workDir string) (*gateway, error) {
	g := &gateway{DataDir: filepath.Join(workDir, "gw-data"), AccessLog: filepath.Join(workDir, "gw-access.log")}
	if err := os.MkdirAll(g.DataDir, 0o755); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	g.Endpoint = "http://" + addr
	logf, err := os.Create(filepath.Join(workDir, "gw.out"))
	if err != nil {
		return nil, err
	}
	g.cmd = exec.Command(bin, "--port", addr, "--access-log", g.AccessLog, "posix", g.DataDir)
	g.cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+gwAccess, "ROOT_SECRET_KEY="+gwSecret)
	g.cmd.Stdout, g.cmd.Stderr = logf, logf
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := g.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start versitygw: %w", err)
	}
	g.client = s3.New(s3.Options{
		BaseEndpoint: aws.String(g.Endpoint), Region: gwRegion, UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(gwAccess, gwSecret, ""),
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			g.stop()
			return nil, fmt.Errorf("versitygw did not listen on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return g, nil
}

func (g *gateway) stop() {
	if g.cmd == nil || g.cmd.Process == nil {
		return
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { g.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = g.cmd.Process.Kill()
		<-done
	}
}

// cpu is the server's user and system time so far.
func (g *gateway) cpu() time.Duration { return procCPU(g.cmd.Process.Pid) }

// storageOptions are the reaper --storage-option pairs for this server.
func (g *gateway) storageOptions() []string {
	return []string{
		"aws_endpoint=" + g.Endpoint, "aws_region=" + gwRegion, "allow_http=true",
		"aws_access_key_id=" + gwAccess, "aws_secret_access_key=" + gwSecret,
	}
}

func (g *gateway) optionsMap() map[string]string {
	m := map[string]string{}
	for _, kv := range g.storageOptions() {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// createBucket creates a bucket through the S3 API (so versitygw records its
// owner) and returns the directory its objects live in.
func (g *gateway) createBucket(ctx context.Context, name string) (string, error) {
	if _, err := g.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		return "", fmt.Errorf("create bucket %s: %w", name, err)
	}
	return filepath.Join(g.DataDir, name), nil
}

// deleteBucket removes an emptied bucket (errors ignored: cleanup only).
func (g *gateway) deleteBucket(ctx context.Context, name string) {
	_ = os.RemoveAll(filepath.Join(g.DataDir, name))
	_, _ = g.client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)})
}

func (g *gateway) put(ctx context.Context, bucket, key string, body []byte) error {
	_, err := g.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)})
	return err
}

// putMany writes the objects in parallel (16 in flight).
func (g *gateway) putMany(ctx context.Context, bucket string, objs map[string][]byte) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	sem := make(chan struct{}, 16)
	for k, b := range objs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := g.put(ctx, bucket, k, b); err != nil {
				mu.Lock()
				first = cmpErr(first, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// count lists prefix through the S3 API and returns how many objects it
// holds (a check that objects created as files are visible).
func (g *gateway) count(ctx context.Context, bucket, prefix string) (int, error) {
	p := s3.NewListObjectsV2Paginator(g.client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	n := 0
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return n, err
		}
		n += len(page.Contents)
	}
	return n, nil
}

// logOffset is the access log's current size: requests after it belong to
// the next measured command.
func (g *gateway) logOffset() int64 {
	st, err := os.Stat(g.AccessLog)
	if err != nil {
		return 0
	}
	return st.Size()
}

// settledOffset is the access log's size once it stops growing (two
// reads 200 ms apart agree, or after 5 s): the requests sent before it was
// called are in the log before it, since the server writes the log
// asynchronously.
func (g *gateway) settledOffset() int64 {
	last := g.logOffset()
	for range 25 {
		time.Sleep(200 * time.Millisecond)
		off := g.logOffset()
		if off == last {
			return off
		}
		last = off
	}
	return last
}

// requestsSince counts the access-log lines after offset for bucket, by
// operation (versitygw's "s3_<Operation>" field, prefix dropped). The log is
// read until two reads agree, since the server writes it asynchronously.
func (g *gateway) requestsSince(offset int64, bucket string) (map[string]int64, error) {
	var last map[string]int64
	for range 20 {
		m, err := g.readLog(offset, bucket)
		if err != nil {
			return nil, err
		}
		if last != nil && sum(m) == sum(last) {
			return m, nil
		}
		last = m
		time.Sleep(150 * time.Millisecond)
	}
	return last, nil
}

func (g *gateway) readLog(offset int64, bucket string) (map[string]int64, error) {
	n, _, err := g.readLogTimes(offset, bucket)
	return n, err
}

// readLogTimes is readLog with the server's own time spent on the
// requests, by operation, in milliseconds (the access log's total time).
func (g *gateway) readLogTimes(offset int64, bucket string) (count, ms map[string]int64, err error) {
	f, err := os.Open(g.AccessLog)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, nil, err
	}
	count, ms = map[string]int64{}, map[string]int64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		// <owner> <bucket> [date time] <ip> <requester> <id> s3_<Op> <key>
		// <uri> <status> <error> <bytes> <object size> <total ms> ...
		fs := strings.Fields(sc.Text())
		if len(fs) < 8 || fs[1] != bucket {
			continue
		}
		for i := 4; i < 9; i++ {
			if op, ok := strings.CutPrefix(fs[i], "s3_"); ok {
				count[op]++
				if i+7 < len(fs) {
					t, _ := strconv.ParseInt(fs[i+7], 10, 64)
					ms[op] += t
				}
				break
			}
		}
	}
	return count, ms, sc.Err()
}
