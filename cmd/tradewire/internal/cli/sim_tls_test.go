package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
)

// protoRecorder notes the protocol of every answer.
type protoRecorder struct {
	next   http.RoundTripper
	mu     sync.Mutex
	protos []string
}

func (p *protoRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := p.next.RoundTrip(r)
	if err == nil {
		p.mu.Lock()
		p.protos = append(p.protos, resp.Proto)
		p.mu.Unlock()
	}
	return resp, err
}

// trustingTransport trusts only the PEM certificate in file and speaks
// HTTP/2 when offered.
func trustingTransport(t *testing.T, file string) *protoRecorder {
	t.Helper()
	pemBytes, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		t.Fatalf("%s holds no PEM certificate", file)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &protoRecorder{next: tr}
}

func demoClient(t *testing.T, env map[string]string, rt http.RoundTripper) *transport.Client {
	t.Helper()
	key, err := signing.ParsePrivateKey(env[envPrivateKey])
	if err != nil {
		t.Fatal(err)
	}
	signer, err := signing.New(env[envAPIKey], key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := transport.New(env[envBaseURL], signer, transport.Config{RoundTripper: rt, Retry: fastRetries})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSimServe_TLSServesHTTP2AndHTTP1AndWritesItsCertificate(t *testing.T) {
	t.Parallel()
	env, _, stop := startSimServe(t, "--addr", "127.0.0.1:0", "--tls")
	base, caFile := env[envBaseURL], env[envSSLCertFile]
	if !strings.HasPrefix(base, "https://127.0.0.1:") {
		t.Fatalf("%s = %q, want https on loopback", envBaseURL, base)
	}
	// The file is a CA; the server presents an end entity it signed, as
	// rustls-based clients require.
	conn, err := tls.Dial("tcp", strings.TrimPrefix(base, "https://"), trustingTransport(t, caFile).next.(*http.Transport).TLSClientConfig)
	if err != nil {
		t.Fatalf("handshake trusting %s alone: %v", caFile, err)
	}
	peer := conn.ConnectionState().PeerCertificates
	conn.Close()
	if len(peer) != 1 || peer[0].IsCA || peer[0].KeyUsage&x509.KeyUsageCertSign != 0 {
		t.Errorf("served %d certificates, the first IsCA %v: want one end entity", len(peer), peer[0].IsCA)
	}
	rt := trustingTransport(t, caFile)
	resp, err := demoClient(t, env, rt).Get(context.Background(), "/api/v2/crypto/trading/accounts/")
	if err != nil {
		t.Fatalf("GET accounts over TLS: %v", err)
	}
	if !strings.Contains(string(resp.Body), `"TW0000000001"`) {
		t.Errorf("accounts = %s", resp.Body)
	}
	if len(rt.protos) != 1 || rt.protos[0] != "HTTP/2.0" {
		t.Errorf("answered over %v, want HTTP/2.0", rt.protos)
	}
	// The CLI, given a transport that trusts the printed certificate.
	r := runWith(t, Options{Getenv: func(k string) string { return env[k] },
		TransportConfig: transport.Config{Retry: fastRetries, RoundTripper: rt}},
		"api", "GET", "/api/v2/crypto/trading/orders/?account_number=TW0000000001")
	if r.code != 0 || !strings.Contains(r.stdout, `"results"`) {
		t.Errorf("tradewire api over TLS: exit %d, stdout %.200q, stderr %q", r.code, r.stdout, r.stderr)
	}
	// A client that cannot speak HTTP/2 (as Python's requests) is served
	// HTTP/1.1.
	h1 := trustingTransport(t, caFile)
	h1.next.(*http.Transport).ForceAttemptHTTP2 = false
	h1.next.(*http.Transport).TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	if _, err := demoClient(t, env, h1).Get(context.Background(), "/api/v2/crypto/trading/accounts/"); err != nil {
		t.Fatalf("GET accounts over TLS + HTTP/1.1: %v", err)
	}
	if len(h1.protos) != 1 || h1.protos[0] != "HTTP/1.1" {
		t.Errorf("answered over %v, want HTTP/1.1", h1.protos)
	}
	// A client that does not trust it is refused.
	if _, err := http.Get(base + "/api/v2/crypto/trading/accounts/"); err == nil {
		t.Error("a client without the certificate was served")
	}
	res := stop()
	if res.code != 0 || !strings.Contains(res.stderr, caFile) {
		t.Errorf("exit %d, stderr %q: want 0 and the certificate's path", res.code, res.stderr)
	}
	if _, err := os.Stat(caFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary certificate %s is left behind: %v", caFile, err)
	}
}

func TestSimServe_TLSFaultsCommitTheCreate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plan, caFile := filepath.Join(dir, "faults.json"), filepath.Join(dir, "ca.pem")
	const body = `{"faults":[{"kind":"refused_stream","method":"POST","path":"/api/v2/crypto/trading/orders/"}],
	  "hostile":{"clock_offset":"5s"}, "duplicate":"create_second"}`
	if err := os.WriteFile(plan, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	env, _, stop := startSimServe(t, "--addr", "127.0.0.1:0", "--tls", "--ca-file", caFile, "--faults", plan)
	if got, _ := filepath.Abs(caFile); env[envSSLCertFile] != got {
		t.Errorf("%s = %q, want %q", envSSLCertFile, env[envSSLCertFile], got)
	}
	c := demoClient(t, env, trustingTransport(t, caFile))
	create := []byte(`{"client_order_id":"3b8e1f0e-2b61-4a52-9a56-1b2b3c4d5e6f","side":"buy","type":"limit","symbol":"DOGE-USD","limit_order_config":{"asset_quantity":"10","limit_price":"0.01"}}`)
	if _, err := c.Do(context.Background(), "POST", "/api/v2/crypto/trading/orders/?account_number=TW0000000001", create); err == nil {
		t.Error("the create was answered; want its stream ended after the commit")
	}
	res := stop()
	if !strings.Contains(res.stderr, "1 orders created") {
		t.Errorf("stderr %q: want the create committed once", res.stderr)
	}
	if _, err := os.Stat(caFile); err != nil {
		t.Errorf("--ca-file %s must stay: %v", caFile, err)
	}
}
