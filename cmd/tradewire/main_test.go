package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/venue"
)

const envMainArgs = "TRADEWIRE_TEST_MAIN_ARGS"

// TestMainProcess is not a test: run by TestSignalsEndPlaceAsUnknown, it
// is the tradewire command, main and all, with the arguments in
// TRADEWIRE_TEST_MAIN_ARGS.
func TestMainProcess(t *testing.T) {
	raw := os.Getenv(envMainArgs)
	if raw == "" {
		t.Skip("helper process for TestSignalsEndPlaceAsUnknown")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		os.Exit(99)
	}
	os.Args = append([]string{"tradewire"}, args...)
	main()
}

// TestSignalsEndPlaceAsUnknown stops "order place" while its create is at
// the venue, with each signal a closed terminal or session, Ctrl-C or a
// supervisor sends. Each ends the command with its exit code 5 and the one
// line naming the client_order_id, rather than killing it silently with
// the outcome unknown and nothing said.
func TestSignalsEndPlaceAsUnknown(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no POSIX signals")
	}
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			venue := brokertest.NewServer(venue.Config{})
			defer venue.Close()
			upstream, err := url.Parse(venue.URL)
			if err != nil {
				t.Fatal(err)
			}
			proxy := httputil.NewSingleHostReverseProxy(upstream)
			arrived, stop := make(chan struct{}, 1), make(chan struct{})
			// The venue, except that the create is taken and never answered.
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost {
					proxy.ServeHTTP(w, r)
					return
				}
				_, _ = io.Copy(io.Discard, r.Body) // so that the server sees the client go
				select {
				case arrived <- struct{}{}:
				default:
				}
				select {
				case <-r.Context().Done():
				case <-stop:
				}
			}))
			defer srv.Close()
			defer close(stop) // before srv.Close, which waits for the handler
			raw, err := json.Marshal([]string{"order", "place", "--account-number", "TW0000000001",
				"--symbol", "BTC-USD", "--side", "buy", "--type", "limit", "--quantity", "0.001", "--limit-price", "1000",
				"--idempotency-key", "k"})
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestMainProcess$")
			cmd.Env = []string{envMainArgs + "=" + string(raw), "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"),
				"TRADEWIRE_BASE_URL=" + srv.URL,
				"TRADEWIRE_API_KEY=" + venue.APIKey, "TRADEWIRE_PRIVATE_KEY=" + venue.PrivateKeyBase64,
				"TRADEWIRE_STORE=" + filepath.Join(t.TempDir(), "intents.db")}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case <-arrived:
			case err := <-exited:
				t.Fatalf("ended before its create reached the venue: %v, stderr %q", err, stderr.String())
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err = <-exited
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			st := cmd.ProcessState
			line := stderr.String()
			if !st.Exited() || st.ExitCode() != 5 || !strings.HasPrefix(line, "tradewire: ") || !strings.Contains(line, "client_order_id") ||
				strings.Count(line, "\n") != 1 {
				t.Errorf("after %v: %v, stderr %q; want exit 5 and one line naming the client_order_id", sig, st, line)
			}
		})
	}
}
