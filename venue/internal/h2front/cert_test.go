package h2front

import (
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// serverNames are the names the server's certificate must cover.
var serverNames = []string{"127.0.0.1", "::1", "localhost"}

// checkChain checks leaf and ca as a strict verifier (rustls/webpki)
// does: the authority is a CA that signs certificates, the leaf is an end
// entity fit for a TLS server (not a CA, digitalSignature, serverAuth,
// the three loopback names), and the leaf verifies against a pool that
// holds the authority alone, for each name.
func checkChain(t *testing.T, leaf, ca *x509.Certificate) {
	t.Helper()
	if !ca.IsCA || !ca.BasicConstraintsValid || ca.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("authority: IsCA %v, BasicConstraintsValid %v, KeyUsage %b: want a CA with keyCertSign",
			ca.IsCA, ca.BasicConstraintsValid, ca.KeyUsage)
	}
	if leaf.IsCA || leaf.KeyUsage&x509.KeyUsageCertSign != 0 {
		t.Errorf("server certificate: IsCA %v, KeyUsage %b: a CA used as an end entity (rustls: CaUsedAsEndEntity)", leaf.IsCA, leaf.KeyUsage)
	}
	if !leaf.BasicConstraintsValid {
		t.Error("server certificate: no basic constraints (CA:FALSE)")
	}
	if leaf.KeyUsage&x509.KeyUsageDigitalSignature == 0 {
		t.Errorf("server certificate: KeyUsage %b, want digitalSignature", leaf.KeyUsage)
	}
	if _, isRSA := leaf.PublicKey.(*rsa.PublicKey); isRSA && leaf.KeyUsage&x509.KeyUsageKeyEncipherment == 0 {
		t.Errorf("server certificate: an RSA key without keyEncipherment")
	}
	if !slices.Equal(leaf.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		t.Errorf("server certificate: ExtKeyUsage %v, want serverAuth", leaf.ExtKeyUsage)
	}
	if leaf.Equal(ca) || leaf.CheckSignatureFrom(ca) != nil {
		t.Error("server certificate is not signed by the authority")
	}
	if len(ca.SubjectKeyId) == 0 || !slices.Equal(leaf.AuthorityKeyId, ca.SubjectKeyId) {
		t.Errorf("server certificate's authority key id %x, want the authority's subject key id %x", leaf.AuthorityKeyId, ca.SubjectKeyId)
	}
	ips := make([]string, len(leaf.IPAddresses))
	for i, ip := range leaf.IPAddresses {
		ips[i] = ip.String()
	}
	if !slices.Equal(ips, []string{"127.0.0.1", "::1"}) || !slices.Equal(leaf.DNSNames, []string{"localhost"}) {
		t.Errorf("server certificate names IPs %v and DNS %v, want 127.0.0.1, ::1 and localhost", ips, leaf.DNSNames)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, name := range serverNames {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("verify for %s against the authority alone: %v", name, err)
		}
	}
}

// TestCertificateChainIsStrict checks the certificate the server presents
// in a handshake, and the authority it hands out, as a strict verifier
// would.
func TestCertificateChainIsStrict(t *testing.T) {
	t.Parallel()
	s := setup(t, http.HandlerFunc(echo))
	block, _ := pem.Decode(s.CACertPEM())
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatal("CACertPEM holds no certificate")
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !ca.Equal(s.Certificate()) {
		t.Error("CACertPEM and Certificate differ")
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	addr := strings.TrimPrefix(s.URL, "https://")
	for _, name := range serverNames {
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: name, NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12})
		if err != nil {
			t.Fatalf("handshake for %s: %v", name, err)
		}
		peer := conn.ConnectionState().PeerCertificates
		conn.Close()
		if len(peer) != 1 {
			t.Fatalf("server sent %d certificates, want its own alone", len(peer))
		}
		checkChain(t, peer[0], ca)
	}
}

// TestTrustingOnlyTheCAFile is a client as a user would set one up: it
// trusts the PEM file alone, reaches the server by 127.0.0.1 and by
// localhost, and speaks HTTP/2.
func TestTrustingOnlyTheCAFile(t *testing.T) {
	t.Parallel()
	s := setup(t, http.HandlerFunc(echo))
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, s.CACertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		t.Fatal("the CA file is not accepted by a pool")
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	for _, host := range []string{"127.0.0.1", "localhost"} {
		req, _ := http.NewRequestWithContext(testContext(t), http.MethodGet, strings.Replace(s.URL, "127.0.0.1", host, 1)+"/", nil)
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		resp.Body.Close()
		if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusCreated {
			t.Errorf("%s: %s %d, want HTTP/2 201", host, resp.Proto, resp.StatusCode)
		}
	}
}

// TestPythonDefaultContextTrustsTheCA handshakes from Python's ssl module
// with its default context (hostname checked, the CA file the only
// trust), when python3 is installed. It needs no network: loopback only.
func TestPythonDefaultContextTrustsTheCA(t *testing.T) {
	t.Parallel()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	s := setup(t, http.HandlerFunc(echo))
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, s.CACertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(s.URL, "https://"))
	const script = `
import socket, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[1])
if hasattr(ssl, "VERIFY_X509_STRICT"):
    ctx.verify_flags |= ssl.VERIFY_X509_STRICT
ctx.set_alpn_protocols(["h2"])
for host in ("localhost", "127.0.0.1"):
    with socket.create_connection(("127.0.0.1", int(sys.argv[2]))) as sock:
        with ctx.wrap_socket(sock, server_hostname=host) as tls:
            print(host, tls.version(), tls.selected_alpn_protocol())
`
	out, err := exec.CommandContext(testContext(t), py, "-c", script, file, port).CombinedOutput()
	if err != nil {
		t.Fatalf("python3: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "localhost") || !strings.Contains(string(out), "127.0.0.1") || !strings.Contains(string(out), " h2") {
		t.Errorf("python3 said %q", out)
	}
}
