package pgstore_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/idempotency/pgstore"
	"github.com/tradewire/tradewire/internal/pgtest"
	"github.com/tradewire/tradewire/transport"
)

// TestGuaranteeRule: one row per rule of what the server's settings let a
// Store vouch for.
func TestGuaranteeRule(t *testing.T) {
	for _, tc := range []struct {
		name          string
		commit, names string
		recovery      bool
		standbys      int
		hosts         int
		want          pgstore.Guarantee
	}{
		{"sync standby streaming", "on", "*", false, 1, 2, pgstore.SynchronousStandby},
		{"remote_apply", "remote_apply", "FIRST 1 (s1, s2)", false, 2, 3, pgstore.SynchronousStandby},
		{"remote_write", "remote_write", "ANY 1 (s1)", false, 1, 2, pgstore.SynchronousStandby},
		{"sync names but no standby connected: commits wait", "on", "*", false, 0, 2, pgstore.SynchronousStandby},
		{"sync names, local commit", "local", "*", false, 1, 2, pgstore.AsynchronousStandby},
		{"async standby", "on", "", false, 1, 2, pgstore.AsynchronousStandby},
		{"async standby, one host in the URL", "on", "", false, 1, 1, pgstore.AsynchronousStandby},
		{"single server", "on", "", false, 0, 1, pgstore.SingleServer},
		{"single server, local commit", "local", "", false, 0, 1, pgstore.SingleServer},
		{"single server, commits not flushed", "off", "", false, 0, 1, pgstore.AsynchronousStandby},
		{"several hosts, no standby streaming", "on", "", false, 0, 2, pgstore.AsynchronousStandby},
		{"a server in recovery", "on", "*", true, 0, 1, pgstore.AsynchronousStandby},
	} {
		if got := pgstore.GuaranteeFor(tc.commit, tc.names, tc.recovery, tc.standbys, tc.hosts); got != tc.want {
			t.Errorf("%s: %s", tc.name, got)
		}
	}
}

// TestGuaranteeOf: what the shared primary and synchronous standby, a
// single server, and a primary with an asynchronous standby vouch for,
// as Open reads them; and no other store has a guarantee.
func TestGuaranteeOf(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, url string, want pgstore.Guarantee) {
		t.Helper()
		s := open(t, url, pgtest.Account(t), pgstore.Config{})
		g, ok := pgstore.GuaranteeOf(s)
		if !ok || g != want {
			t.Fatalf("GuaranteeOf = %q, %v; want %q", g, ok, want)
		}
		if w := s.(idempotency.Witness).VouchesNew(); w != (want != pgstore.AsynchronousStandby) {
			t.Fatalf("VouchesNew = %v under %s", w, want)
		}
	}
	t.Run("synchronous standby", func(t *testing.T) {
		t.Parallel()
		check(t, pgtest.URL(t), pgstore.SynchronousStandby)
	})
	t.Run("single server", func(t *testing.T) {
		t.Parallel()
		c := pgtest.Start(t, pgtest.NoStandby)
		check(t, c.URL(), pgstore.SingleServer)
	})
	t.Run("asynchronous standby", func(t *testing.T) {
		t.Parallel()
		c := pgtest.Start(t, pgtest.AsyncStandby)
		check(t, c.URL(), pgstore.AsynchronousStandby)
		check(t, c.ServerURL(c.Primary), pgstore.AsynchronousStandby)
	})
	if _, ok := pgstore.GuaranteeOf(idempotency.NewMemoryStore()); ok {
		t.Fatal("GuaranteeOf(a memory store) = ok")
	}
}

// TestCommitsThatCannotReplicateTimeOut: with synchronous_standby_names
// set and no standby connected, a commit waits; the Store's calls fail
// within Timeout with an error matching transport.ErrUnavailable, and the
// Store still says SynchronousStandby: nothing it reports written can be
// lost.
func TestCommitsThatCannotReplicateTimeOut(t *testing.T) {
	t.Parallel()
	c := pgtest.Start(t, pgtest.NoStandby)
	url, acct := c.URL(), pgtest.Account(t)
	const timeout = 500 * time.Millisecond
	s := open(t, url, acct, pgstore.Config{Timeout: timeout})
	sql(t, url, `CREATE TABLE probe (n int)`)
	sql(t, url, `ALTER SYSTEM SET synchronous_standby_names = '*'`)
	sql(t, url, `SELECT pg_reload_conf()`)
	ctx := context.Background()
	// The server takes the setting up a moment after the reload: wait until
	// a commit waits.
	probe, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close(ctx)
	for i := 0; ; i++ {
		pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		_, err := probe.Exec(pctx, `INSERT INTO probe VALUES (1)`)
		cancel()
		if err != nil {
			break
		}
		if i == 100 {
			t.Fatal("commits still return at once 100 tries after synchronous_standby_names was set")
		}
	}
	rec := record(acct, "c1", time.Now())
	for _, write := range []func() error{
		func() error { _, _, err := s.Create(ctx, rec); return err },
		func() error { return s.Update(ctx, rec) },
		func() error { return s.(idempotency.Meta).PutMeta(ctx, "halt", []byte("x")) },
	} {
		start := time.Now()
		err := write()
		if took := time.Since(start); !errors.Is(err, transport.ErrUnavailable) || took > 4*timeout {
			t.Fatalf("a write with no standby to confirm it: %v after %v; want ErrUnavailable within %v", err, took, timeout)
		}
	}
	// A read makes a new connection, which reads the settings again.
	if _, err := s.Get(ctx, "c1"); err != nil && !errors.Is(err, idempotency.ErrNotFound) {
		t.Fatal(err)
	}
	// A process starting now opens the store (its schema is current, so
	// opening writes nothing), and its writes time out as well.
	late, err := pgstore.Open(ctx, url, acct, pgstore.Config{Timeout: timeout})
	if err != nil {
		t.Fatalf("Open with commits blocked: %v", err)
	}
	defer late.Close()
	if _, _, err := late.Create(ctx, record(acct, "c2", time.Now())); !errors.Is(err, transport.ErrUnavailable) {
		t.Fatalf("a late Create with no standby to confirm it: %v; want ErrUnavailable", err)
	}
	if g, _ := pgstore.GuaranteeOf(s); g != pgstore.SynchronousStandby {
		t.Fatalf("GuaranteeOf = %s; want %s", g, pgstore.SynchronousStandby)
	}
}

// TestOpenUnreachable: a refused port and a server that accepts TCP but
// never answers are both ErrUnavailable within Timeout, and the password
// in the URL is in no error.
func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		var held []net.Conn
		for {
			c, err := silent.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c) // accept, and say nothing
		}
	}()
	const timeout = 300 * time.Millisecond
	for _, url := range []string{
		"postgres://bot:hunter2secret@127.0.0.1:1/trade?sslmode=disable",
		"postgres://bot:hunter2secret@" + silent.Addr().String() + "/trade?sslmode=disable&connect_timeout=600",
		"host=" + strings.Split(silent.Addr().String(), ":")[0] + " port=" + strings.Split(silent.Addr().String(), ":")[1] + " user=bot password=hunter2secret dbname=trade sslmode=disable",
	} {
		start := time.Now()
		_, err := pgstore.Open(context.Background(), url, "AB1", pgstore.Config{Timeout: timeout})
		took := time.Since(start)
		if !errors.Is(err, transport.ErrUnavailable) || took > 4*timeout {
			t.Errorf("Open(%s) = %v after %v; want ErrUnavailable within %v", strings.ReplaceAll(url, "hunter2secret", "xxxxx"), err, took, timeout)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2secret") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
}

// TestNoPasswordInErrors: a wrong password, and a failing call on a live
// server, never show the password.
func TestNoPasswordInErrors(t *testing.T) {
	t.Parallel()
	c := pgtest.Start(t, pgtest.NoStandby)
	url := c.URL()
	bad := strings.Replace(url, c.Password, c.Password+"wrong", 1)
	if _, err := pgstore.Open(context.Background(), bad, "AB1", pgstore.Config{}); err == nil || strings.Contains(err.Error(), c.Password) {
		t.Fatalf("Open with a wrong password = %v; want an error without it", err)
	}
	s := open(t, url, pgtest.Account(t), pgstore.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := s.Create(ctx, record("X", "c1", time.Now()))
	if err == nil || strings.Contains(err.Error(), c.Password) {
		t.Fatalf("Create = %v", err)
	}
}
