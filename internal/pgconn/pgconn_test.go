package pgconn_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tradewire/tradewire/internal/pgconn"
	"github.com/tradewire/tradewire/internal/pgtest"
	"github.com/tradewire/tradewire/transport"
)

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{"postgres://bot:hunter2@db1:5432,db2:5432/trade?target_session_attrs=read-write", "postgres://bot:xxxxx@db1:5432,db2:5432/trade?target_session_attrs=read-write"},
		{"postgres://bot@db1/trade?password=hunter2&sslmode=require", "postgres://bot@db1/trade?password=xxxxx&sslmode=require"},
		{"host=db1 user=bot password=hunter2 dbname=trade", "host=db1 user=bot password=xxxxx dbname=trade"},
		{"host=db1 password='hunter 2' dbname=trade", "host=db1 password=xxxxx dbname=trade"},
		{"postgres://db1/trade", "postgres://db1/trade"},
		{"postgres://db1:5432,db2:5432/trade", "postgres://db1:5432,db2:5432/trade"},
		{"postgres://bot@db1:5432/trade", "postgres://bot@db1:5432/trade"},
		{"postgres://bot:hunter2@db1:notaport/trade", "postgres://bot:xxxxx@db1:notaport/trade"},
		{"postgres://bot:hunter%402@db1/trade", "postgres://bot:xxxxx@db1/trade"},
	} {
		got := pgconn.Redact(tc.raw)
		if got != tc.want || strings.Contains(got, "hunter") {
			t.Errorf("Redact(%q) = %q, want %q", tc.raw, got, tc.want)
		}
	}
}

// TestUnreachable: a refused port and a server that accepts connections
// but never answers are both unavailable within the timeout, whatever the
// URL's connect_timeout says, and the error never shows the password.
func TestUnreachable(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accept, and say nothing
		}
	}()
	for _, url := range []string{
		"postgres://bot:hunter2@127.0.0.1:1/trade?sslmode=disable",
		"postgres://bot:hunter2@" + silent.Addr().String() + "/trade?sslmode=disable&connect_timeout=3600",
	} {
		start := time.Now()
		_, err := pgconn.Connect(context.Background(), url, pgconn.Options{Timeout: 300 * time.Millisecond, Unavailable: transport.ErrUnavailable})
		if !errors.Is(err, transport.ErrUnavailable) {
			t.Fatalf("Connect(%s) = %v; want ErrUnavailable", pgconn.Redact(url), err)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("error %q shows the password", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("Connect took %v; want it bounded by the timeout", d)
		}
	}
}

// TestMigrate: the steps apply once, in order, and a schema newer than
// the binary is refused.
func TestMigrate(t *testing.T) {
	ctx := context.Background()
	p, err := pgconn.Connect(ctx, pgtest.URL(t), pgconn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	comp := "test_" + strings.ToLower(pgtest.Account(t))
	steps := []string{"CREATE TABLE " + comp + " (n integer)", "ALTER TABLE " + comp + " ADD COLUMN m integer"}
	for range 2 {
		if v, err := p.Migrate(ctx, comp, steps); err != nil || v != 2 {
			t.Fatalf("Migrate = %d, %v", v, err)
		}
	}
	if _, err := p.Exec(ctx, "INSERT INTO "+comp+" (n, m) VALUES (1, 2)"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Migrate(ctx, comp, steps[:1]); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("an older binary: err = %v; want a refusal", err)
	}
	p.Exec(ctx, "DROP TABLE "+comp)
	p.Exec(ctx, "DELETE FROM tradewire_schema WHERE component = $1", comp)
}
