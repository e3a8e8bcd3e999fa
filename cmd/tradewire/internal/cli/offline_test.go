package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tradewire/tradewire/idempotency"
)

// badStores writes intent store files that are not whole stores: garbage,
// a directory, a store cut to half its size and to 16 KiB (which crashed
// bbolt with SIGBUS), and an empty file.
func badStores(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	s, err := idempotency.Open(good, idempotency.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		rec := idempotency.Record{ClientOrderID: fmt.Sprintf("id-%04d", i), Key: strings.Repeat("k", 200), State: idempotency.Pending, CreatedAt: time.Unix(1e9, 0)}
		if _, _, err := s.Create(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return map[string]string{
		"garbage":    write("garbage.db", []byte(strings.Repeat("garbage ", 4096))),
		"directory":  dir,
		"half":       write("half.db", data[:len(data)/2]),
		"16384":      write("16k.db", data[:16384]),
		"empty":      write("empty.db", nil),
		"too short":  write("short.db", []byte("x")),
		"bad checks": write("flipped.db", append([]byte{}, data[:4096]...)),
	}
}

// TestBadStoreExits2WithNothingSent: with a --store file that is not a
// whole store, every command that uses it exits 2 naming the file, sends
// nothing (not even the accounts read) and does not crash.
func TestBadStoreExits2WithNothingSent(t *testing.T) {
	t.Parallel()
	stores := badStores(t)
	commands := map[string][]string{
		"order place": append(append([]string{}, placeArgs...), "--idempotency-key", "k1"),
		"recover":     {"recover"},
		"intents":     {"intents"},
	}
	for storeName, path := range stores {
		for cmdName, args := range commands {
			t.Run(storeName+"/"+cmdName, func(t *testing.T) {
				t.Parallel()
				srv, env := placeVenue(t)
				env[envStore] = path
				r := runCLI(t, env, "", args...)
				if r.code != exitUsage || !strings.Contains(r.stderr, path) || strings.Count(r.stderr, "\n") != 1 {
					t.Errorf("exit %d, stderr %q; want 2 and one line naming %s", r.code, r.stderr, path)
				}
				if n := len(srv.Ledger().Requests()); n != 0 {
					t.Errorf("%d requests sent before the store was found bad", n)
				}
			})
		}
	}
}

// TestBadInputExits2WithNothingSent: each input the venue would refuse,
// or that the library bounds, is refused offline: exit 2, the flag named,
// and no request at the venue.
func TestBadInputExits2WithNothingSent(t *testing.T) {
	t.Parallel()
	place := func(flags ...string) []string {
		args := []string{"order", "place", "--symbol", "BTC-USD", "--side", "buy", "--type", "limit", "--quantity", "0.001", "--limit-price", "1000"}
		return append(args, flags...)
	}
	huge := filepath.Join(t.TempDir(), "huge.key")
	f, err := os.OpenFile(huge, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(2 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	thousand := strings.Repeat("9", 1000)
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string // in stderr
	}{
		{"quantity 1e400", place("--quantity", "1e400"), nil, "--quantity"},
		{"quantity 1e-400", place("--quantity", "1e-400"), nil, "--quantity"},
		{"quantity of 1000 digits", place("--quantity", thousand), nil, "--quantity"},
		{"quantity with 19 places", place("--quantity", "0.0000000000000000001"), nil, "--quantity"},
		{"quantity +1", place("--quantity", "+1"), nil, "--quantity"},
		{"quantity NaN", place("--quantity", "NaN"), nil, "--quantity"},
		{"quantity Inf", place("--quantity", "Inf"), nil, "--quantity"},
		{"limit price 1e400", place("--limit-price", "1e400"), nil, "--limit-price"},
		{"limit price of 21 digits", place("--limit-price", "100000000000000000000"), nil, "--limit-price"},
		{"preview 1e400", []string{"preview", "--symbol", "BTC-USD", "--side", "buy", "--type", "market", "--quantity", "1e400"}, nil, "--quantity"},
		{"preview 1e-400", []string{"preview", "--symbol", "BTC-USD", "--side", "buy", "--type", "market", "--quantity", "1e-400"}, nil, "--quantity"},
		{"estimate 1e400", []string{"estimate", "BTC-USD", "--side", "ask", "--quantity", "0.1,1e400"}, nil, "--quantity"},
		{"estimate 1000 digits", []string{"estimate", "BTC-USD", "--side", "ask", "--quantity", thousand}, nil, "--quantity"},
		{"orders --state bogus", []string{"orders", "--state", "bogus"}, nil, "state"},
		{"orders --type twap", []string{"orders", "--type", "twap"}, nil, "type"},
		{"orders --side short", []string{"orders", "--side", "short"}, nil, "side"},
		{"orders --symbol lower", []string{"orders", "--symbol", "BTC"}, nil, "symbol"},
		{"intents --state bogus", []string{"intents", "--state", "bogus"}, nil, "--state"},
		{"2 GiB key file", []string{"account"}, map[string]string{envPrivateKey: "", envPrivateKeyFile: huge}, "65536 bytes"},
		{"bad account number", []string{"--account-number", "AB-1;x", "account"}, nil, "--account-number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, env := placeVenue(t)
			for k, v := range tt.env {
				env[k] = v
			}
			start := time.Now()
			r := runCLI(t, env, "", tt.args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tt.want) || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want 2 and one line naming %s", r.code, r.stderr, tt.want)
			}
			if strings.Contains(r.stderr, thousand[:100]) {
				t.Errorf("stderr echoes the 1000-digit value: %.200q", r.stderr)
			}
			if n := len(srv.Ledger().Requests()); n != 0 {
				t.Errorf("%d requests sent for a bad input", n)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// TestAccountNumberFlagSkipsTheAccountsRead: with --account-number, order
// placement and listings need no accounts read.
func TestAccountNumberFlagSkipsTheAccountsRead(t *testing.T) {
	t.Parallel()
	srv, env := placeVenue(t)
	acct := runCLI(t, env, "", "account", "-o", "json")
	ok(t, acct)
	var a struct {
		AccountNumber string `json:"account_number"`
	}
	decodeJSON(t, acct.stdout, &a)
	before := len(srv.Ledger().Requests())
	r := runCLI(t, env, "", append(append([]string{"--account-number", a.AccountNumber}, placeArgs...), "--idempotency-key", "acct-flag")...)
	ok(t, r)
	r = runCLI(t, env, "", "--account-number", a.AccountNumber, "orders", "-o", "json")
	ok(t, r)
	for _, req := range srv.Ledger().Requests()[before:] {
		if strings.HasPrefix(req.Target, "/api/v2/crypto/trading/accounts/") {
			t.Errorf("read the accounts list with --account-number: %s %s", req.Method, req.Target)
		}
	}
	if n := creates(srv); n != 1 {
		t.Errorf("%d creates", n)
	}
}
