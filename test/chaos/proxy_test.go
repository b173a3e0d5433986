package chaos

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// fault is one kind of injected failure.
type fault string

const (
	faultSlowDown    fault = "503 SlowDown"
	faultInternal    fault = "500 InternalError"
	faultThrottle    fault = "429 TooManyRequests"
	faultResetBefore fault = "reset before forwarding"        // the request never reached the server
	faultResetAfter  fault = "reset after forwarding"         // it did; the answer was lost
	faultLatency     fault = "latency"                        // forwarded late
	faultKeyError    fault = "per-key error in DeleteObjects" // some keys failed, not deleted
)

var requestFaults = []fault{faultSlowDown, faultInternal, faultThrottle, faultResetBefore, faultResetAfter, faultLatency}

// faultConfig sets per-request probabilities of each fault (their sum is the
// fault rate) and the per-key error rate of DeleteObjects.
type faultConfig struct {
	rates      map[fault]float64
	latencyMax time.Duration
	// keyErrorRate is the probability of each key of a DeleteObjects to fail
	// with one of keyErrorCodes (InternalError and SlowDown are transient,
	// AccessDenied is permanent).
	keyErrorRate  float64
	keyErrorCodes []string
	// keyFilter, when set, limits per-key errors to matching keys.
	keyFilter func(key string) bool
}

// spread divides rate evenly over the request faults.
func spread(rate float64) map[fault]float64 {
	m := map[fault]float64{}
	for _, f := range requestFaults {
		m[f] = rate / float64(len(requestFaults))
	}
	return m
}

// hookAction is what a per-request hook wants done with one request.
type hookAction int

const (
	hookPass    hookAction = iota // forward (faults may still apply); its func, if any, runs first
	hookDrop                      // close the connection, forward nothing
	hookForward                   // forward, then close without answering
)

// proxy is a fault-injecting reverse proxy on 127.0.0.1 in front of a real
// test server. Its hooks (kill or stop at the k-th request) work on any
// store: a request is forwarded as it came, Host header included (SigV4
// signs it). Its faults are S3's: error answers in S3's XML, from one
// seeded RNG; DeleteObjects with per-key errors is forwarded with the
// failing keys taken out (so they are really not deleted) and answered
// with <Error> entries for them.
type proxy struct {
	t        testing.TB
	target   *url.URL
	upstream *s3.Client
	srv      *httptest.Server
	tr       *http.Transport

	mu   sync.Mutex
	rng  *rand.Rand
	cfg  faultConfig
	hook func(n int64, r *http.Request) (hookAction, func())

	requests atomic.Int64
	counts   sync.Map // fault -> *atomic.Int64

	// gen changes when the client is stopped or resumed (freeze, thaw): a
	// request whose bytes were still arriving across a change is reset, never
	// forwarded, as a server times out an upload that stalls (a stopped
	// client's half-sent request never lands late, once the lease it was
	// sent under may be someone else's). pending counts requests whose body
	// has arrived and whose upstream answer has not; conns are the client's
	// connections: settle waits for both (proxy_conns_test.go).
	gen       atomic.Int64
	pending   atomic.Int64
	straddled atomic.Int64
	connMu    sync.Mutex
	conns     map[*proxyConn]bool
}

// freeze and thaw mark the moments the client is stopped and resumed.
func (p *proxy) freeze() { p.gen.Add(1) }
func (p *proxy) thaw()   { p.gen.Add(1) }

func newProxy(t testing.TB, srv *objstoretest.S3Server, seed uint64) *proxy {
	t.Helper()
	return newProxyTo(t, srv.Endpoint, srv.Client, seed)
}

// newProxyTo puts a proxy in front of the server at endpoint. upstream is
// the S3 client per-key DeleteObjects errors need (nil on other stores:
// only whole-request faults and hooks apply there).
func newProxyTo(t testing.TB, endpoint string, upstream *s3.Client, seed uint64) *proxy {
	t.Helper()
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, target: target, upstream: upstream, rng: newRand(seed),
		tr: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(p.serve)) // listens on 127.0.0.1
	p.srv.Listener = proxyListener{Listener: p.srv.Listener, p: p}
	p.srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, proxyConnKey{}, c)
	}
	p.srv.Start()
	t.Cleanup(func() {
		p.srv.CloseClientConnections()
		p.srv.Close()
		p.tr.CloseIdleConnections()
	})
	return p
}

// URL is the endpoint reaper is pointed at (aws_endpoint).
func (p *proxy) URL() string { return p.srv.URL }

// set replaces the fault configuration (no faults: faultConfig{}).
func (p *proxy) set(cfg faultConfig) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cfg = cfg
}

// setHook installs a per-request hook (nil removes it) and resets the
// request counter it sees.
//
// The hook returns what to do with request n and, optionally, a function to
// call once that is done (before the client learns anything).
func (p *proxy) setHook(h func(n int64, r *http.Request) (hookAction, func())) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hook = h
	p.requests.Store(0)
}

func (p *proxy) count(f fault) *atomic.Int64 {
	v, _ := p.counts.LoadOrStore(f, new(atomic.Int64))
	return v.(*atomic.Int64)
}

// injected returns how often each fault was injected.
func (p *proxy) injected() map[fault]int64 {
	out := map[fault]int64{}
	p.counts.Range(func(k, v any) bool {
		out[k.(fault)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

// draw picks this request's fault ("" for none) and its latency.
func (p *proxy) draw() (fault, time.Duration, faultConfig) {
	p.mu.Lock()
	defer p.mu.Unlock()
	u := p.rng.Float64()
	var chosen fault
	acc := 0.0
	for _, f := range requestFaults {
		acc += p.cfg.rates[f]
		if u < acc {
			chosen = f
			break
		}
	}
	var lat time.Duration
	if chosen == faultLatency && p.cfg.latencyMax > 0 {
		lat = time.Duration(p.rng.Int64N(int64(p.cfg.latencyMax)))
	}
	return chosen, lat, p.cfg
}

func (p *proxy) serve(w http.ResponseWriter, r *http.Request) {
	c := connOf(r.Context())
	defer c.idle()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		p.reset(w)
		return
	}
	if c.straddled() {
		p.straddled.Add(1)
		p.reset(w)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	p.pending.Add(1)
	var once sync.Once
	settled := func() { once.Do(func() { p.pending.Add(-1) }) }
	defer settled()
	r = r.WithContext(context.WithValue(r.Context(), settledKey{}, settled))

	n := p.requests.Add(1)
	p.mu.Lock()
	hook := p.hook
	p.mu.Unlock()
	if hook != nil {
		switch act, then := hook(n, r); act {
		case hookDrop:
			p.forwardThen(w, r, false, false, then)
			return
		case hookForward:
			p.forwardThen(w, r, true, false, then)
			return
		case hookPass:
			if then != nil {
				then()
			}
		}
	}
	f, lat, cfg := p.draw()
	if f != "" {
		p.count(f).Add(1)
	}
	switch f {
	case faultSlowDown:
		p.s3Error(w, r, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
	case faultInternal:
		p.s3Error(w, r, http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
	case faultThrottle:
		p.s3Error(w, r, http.StatusTooManyRequests, "TooManyRequests", "Too many requests.")
	case faultResetBefore:
		p.reset(w)
	case faultResetAfter:
		p.forwardThen(w, r, true, false, nil)
	default:
		if lat > 0 {
			time.Sleep(lat) // the injected latency itself
		}
		if isDeleteObjects(r) && cfg.keyErrorRate > 0 && p.upstream != nil {
			p.deleteWithKeyErrors(w, r, cfg)
			return
		}
		p.forwardThen(w, r, true, true, nil)
	}
}

// settledKey carries a request's settled func: called once its upstream
// answer is in (the effect, if any, has landed).
type settledKey struct{}

func markSettled(r *http.Request) {
	if f, ok := r.Context().Value(settledKey{}).(func()); ok {
		f()
	}
}

func isDeleteObjects(r *http.Request) bool {
	_, ok := r.URL.Query()["delete"]
	return r.Method == http.MethodPost && ok
}

// reset closes the client's connection without an answer.
func (p *proxy) reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("proxy: response writer cannot hijack")
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // RST, not FIN
	}
	conn.Close()
}

// forwardThen sends r to the server (if send) and relays the answer (if
// deliver). Otherwise the answer is read and dropped and the client's
// connection reset: the request landed or not, the client cannot know.
// then, if set, runs before the client hears anything.
func (p *proxy) forwardThen(w http.ResponseWriter, r *http.Request, send, deliver bool, then func()) {
	if !send {
		if then != nil {
			then()
		}
		p.reset(w)
		return
	}
	out := r.Clone(r.Context())
	if !deliver {
		// Finish the request even if the client goes away.
		out = r.Clone(context.WithoutCancel(r.Context()))
	}
	out.URL.Scheme, out.URL.Host = p.target.Scheme, p.target.Host
	out.RequestURI = ""
	out.Host = r.Host // SigV4 signed the Host header the client sent
	resp, err := p.tr.RoundTrip(out)
	markSettled(r)
	if then != nil {
		then()
	}
	if err != nil {
		p.reset(w)
		return
	}
	defer resp.Body.Close()
	if !deliver {
		_, _ = io.Copy(io.Discard, resp.Body)
		p.reset(w)
		return
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// s3Error answers like S3 does.
func (p *proxy) s3Error(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/xml")
	if code == "SlowDown" || status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "0")
	}
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><RequestId>chaos</RequestId></Error>`, code, msg)
	}
}

type deleteRequest struct {
	Objects []struct {
		Key string `xml:"Key"`
	} `xml:"Object"`
	Quiet bool `xml:"Quiet"`
}

type deleteResult struct {
	XMLName xml.Name         `xml:"http://s3.amazonaws.com/doc/2006-03-01/ DeleteResult"`
	Deleted []deletedEntry   `xml:"Deleted"`
	Errors  []deleteErrorXML `xml:"Error"`
}

type deletedEntry struct {
	Key string `xml:"Key"`
}

type deleteErrorXML struct {
	Key     string `xml:"Key"`
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

// deleteWithKeyErrors fails some keys of a DeleteObjects: they are taken out
// of the request the server sees (so they stay), and the answer lists them
// as <Error> entries next to the server's own result for the others.
func (p *proxy) deleteWithKeyErrors(w http.ResponseWriter, r *http.Request, cfg faultConfig) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		p.reset(w)
		return
	}
	var req deleteRequest
	if err := xml.Unmarshal(body, &req); err != nil {
		p.s3Error(w, r, http.StatusBadRequest, "MalformedXML", "chaos proxy: "+err.Error())
		return
	}
	bucket := strings.Trim(r.URL.Path, "/")
	var keep []types.ObjectIdentifier
	var res deleteResult
	p.mu.Lock()
	for _, o := range req.Objects {
		if (cfg.keyFilter == nil || cfg.keyFilter(o.Key)) && p.rng.Float64() < cfg.keyErrorRate {
			code := cfg.keyErrorCodes[p.rng.IntN(len(cfg.keyErrorCodes))]
			res.Errors = append(res.Errors, deleteErrorXML{Key: o.Key, Code: code, Message: "injected by the chaos proxy"})
			continue
		}
		keep = append(keep, types.ObjectIdentifier{Key: aws.String(o.Key)})
	}
	p.mu.Unlock()
	p.count(faultKeyError).Add(int64(len(res.Errors)))
	if len(keep) > 0 {
		out, err := p.upstream.DeleteObjects(r.Context(), &s3.DeleteObjectsInput{
			Bucket: aws.String(bucket),
			Delete: &types.Delete{Objects: keep, Quiet: aws.Bool(req.Quiet)},
		})
		markSettled(r)
		if err != nil {
			p.s3Error(w, r, http.StatusInternalServerError, "InternalError", "chaos proxy upstream: "+err.Error())
			return
		}
		for _, d := range out.Deleted {
			res.Deleted = append(res.Deleted, deletedEntry{Key: aws.ToString(d.Key)})
		}
		for _, e := range out.Errors {
			res.Errors = append(res.Errors, deleteErrorXML{Key: aws.ToString(e.Key), Code: aws.ToString(e.Code), Message: aws.ToString(e.Message)})
		}
	}
	slices.SortFunc(res.Errors, func(a, b deleteErrorXML) int { return strings.Compare(a.Key, b.Key) })
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	if err := xml.NewEncoder(&buf).Encode(res); err != nil {
		p.s3Error(w, r, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}
