package cli

import (
	"encoding/base64"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// tlsVenue is the fake venue served over TLS with HTTP/2, by a CA the
// system does not know; it returns the venue, the CA's PEM file and the
// protocols its requests came over.
func tlsVenue(t *testing.T) (*fakeVenue, string, func() []string) {
	t.Helper()
	pub, err := base64.StdEncoding.DecodeString(testPublicB64)
	if err != nil {
		t.Fatal(err)
	}
	v := &fakeVenue{t: t, pub: pub, handler: answer(http.StatusOK, `{"results":[]}`)}
	var mu sync.Mutex
	var protos []string
	v.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		protos = append(protos, r.Proto)
		mu.Unlock()
		v.serve(w, r)
	}))
	v.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusted handshakes are the point
	v.srv.EnableHTTP2 = true
	v.srv.StartTLS()
	t.Cleanup(v.srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: v.srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return v, ca, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), protos...)
	}
}

func TestCACertTrustsAVenueOverTLS(t *testing.T) {
	t.Parallel()
	v, ca, protos := tlsVenue(t)
	env := credEnv(v.srv.URL)
	r := runCLI(t, env, "", "--ca-cert", ca, "api", "GET", "/api/v2/crypto/trading/accounts/")
	ok(t, r)
	env[envCACert] = ca
	ok(t, runCLI(t, env, "", "api", "GET", "/api/v2/crypto/trading/accounts/"))
	if got := protos(); len(got) != 2 || got[0] != "HTTP/2.0" {
		t.Errorf("requests came over %v, want HTTP/2.0", got)
	}
}

func TestCACertUntrustedOrBad(t *testing.T) {
	t.Parallel()
	v, _, _ := tlsVenue(t)
	env := credEnv(v.srv.URL)
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.pem")
	if err := os.WriteFile(big, make([]byte, maxCACertFile+1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ file, want string }{
		{notPEM, "no PEM"}, {big, "larger than"}, {filepath.Join(dir, "none.pem"), "cannot read"},
	} {
		r := runCLI(t, env, "", "--ca-cert", tt.file, "api", "GET", "/api/v2/crypto/trading/accounts/")
		if r.code != exitUsage || !strings.Contains(r.stderr, "--ca-cert "+tt.file) || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("--ca-cert %s: exit %d, stderr %q; want 2 saying %q", tt.file, r.code, r.stderr, tt.want)
		}
	}
	if n := len(v.requests()); n != 0 {
		t.Errorf("%d requests sent with a bad --ca-cert", n)
	}
	// Without the CA the venue's certificate is not trusted: nothing is
	// accepted from it.
	r := runCLI(t, env, "", "api", "GET", "/api/v2/crypto/trading/accounts/")
	if r.code == exitOK || !strings.Contains(r.stderr, "certificate") {
		t.Errorf("untrusted venue: exit %d, stderr %q", r.code, r.stderr)
	}
}
