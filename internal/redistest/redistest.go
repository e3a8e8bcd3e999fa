// Package redistest gives tests a real Redis: the shared server named by
// TRADEWIRE_TEST_REDIS_URL (started by .ci/run and `make test`), or a
// private redis-server process a test can crash and restart.
//
// Tests that need Redis never pass silently: when CI=true and no Redis
// can be had, they fail; elsewhere they skip with a message saying how to
// run them. There are no mocks of Redis here.
//
// Every test works in its own account namespace (Account), so the
// packages that share one server, run in parallel by go test, never see
// each other's keys. Nothing here is safe for use outside tests.
package redistest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// EnvURL names the environment variable holding the shared test Redis URL.
const EnvURL = "TRADEWIRE_TEST_REDIS_URL"

// unavailable fails the test in CI and skips it elsewhere.
func unavailable(tb testing.TB, why string) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf("redistest: %s (CI=true: tests that need Redis must not be skipped; .ci/run starts one)", why)
	}
	tb.Skipf("redistest: %s; run `make test`, or set %s=redis://127.0.0.1:6379/0", why, EnvURL)
}

// URL returns the shared test Redis URL, or fails (CI) / skips the test
// when it is unset.
func URL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		unavailable(tb, EnvURL+" is not set")
	}
	return u
}

// Client returns a client of the shared test Redis, closed when the test
// ends.
func Client(tb testing.TB) *redis.Client {
	tb.Helper()
	opt, err := redis.ParseURL(URL(tb))
	if err != nil {
		tb.Fatalf("redistest: %s: %v", EnvURL, err)
	}
	c := redis.NewClient(opt)
	tb.Cleanup(func() { c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		tb.Fatalf("redistest: %s=%s does not answer PING: %v", EnvURL, opt.Addr, err)
	}
	return c
}

// Account returns a fresh account number (letters and digits) for one
// test, and deletes every key under it when the test ends, if url is
// reachable then.
func Account(tb testing.TB, url string) string {
	tb.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatal(err)
	}
	acct := "T" + strings.ToUpper(hex.EncodeToString(b[:]))
	tb.Cleanup(func() {
		opt, err := redis.ParseURL(url)
		if err != nil {
			return
		}
		c := redis.NewClient(opt)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, pat := range []string{"tradewire:{" + acct + "}:*", "rate:tradewire:{" + acct + "}:*"} {
			iter := c.Scan(ctx, 0, pat, 100).Iterator()
			for iter.Next(ctx) {
				c.Del(ctx, iter.Val())
			}
		}
	})
	return acct
}

// Server is a private redis-server process, run with appendonly yes and
// appendfsync always in its own directory, that a test can kill and
// start again on the same port and data.
type Server struct {
	tb   testing.TB
	port int
	dir  string
	cmd  *exec.Cmd
	args []string
	done chan struct{}
}

// Start starts a private redis-server on a free loopback port and stops
// it when the test ends. Without a redis-server binary it fails (CI) or
// skips the test.
func Start(tb testing.TB, extraArgs ...string) *Server {
	tb.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		unavailable(tb, "redis-server is not installed (apt-get install redis-server)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &Server{tb: tb, port: port, dir: tb.TempDir(), args: extraArgs}
	s.start()
	tb.Cleanup(s.Kill)
	return s
}

func (s *Server) start() {
	s.tb.Helper()
	args := append([]string{
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "",
		"--daemonize", "no", "--logfile", "",
	}, s.args...)
	s.cmd = exec.Command("redis-server", args...)
	s.cmd.Dir = s.dir
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		s.tb.Fatalf("redistest: starting redis-server: %v", err)
	}
	if err := s.cmd.Start(); err != nil {
		s.tb.Fatalf("redistest: starting redis-server: %v", err)
	}
	// The server says when it is ready on its log; read it rather than
	// poll the port.
	ready := make(chan struct{})
	var logMu sync.Mutex
	var logText strings.Builder
	go func() {
		sc := bufio.NewScanner(out)
		signalled := false
		for sc.Scan() {
			logMu.Lock()
			logText.WriteString(sc.Text() + "\n")
			logMu.Unlock()
			if !signalled && strings.Contains(sc.Text(), "Ready to accept connections") {
				signalled = true
				close(ready)
			}
		}
	}()
	s.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { cmd.Wait(); close(done) }(s.cmd, s.done)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case <-ready:
		return
	case <-s.done:
	case <-ctx.Done():
	}
	logMu.Lock()
	defer logMu.Unlock()
	s.tb.Fatalf("redistest: redis-server on %s did not become ready:\n%s", s.Addr(), logText.String())
}

// Addr returns the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// URL returns the server's redis:// URL, database 0.
func (s *Server) URL() string { return fmt.Sprintf("redis://%s/0", s.Addr()) }

// Kill ends the server with SIGKILL, as a crash would, and waits for it.
// Writes acknowledged before it are on disk under appendfsync always.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
	s.cmd = nil
}

// Restart starts the server again on the same port and directory, so it
// reloads its append-only file.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Kill()
	s.start()
}

// RestartWith kills the server and starts it again on the same port and
// directory with args in place of the extra arguments it had: for
// instance "--appendonly", "no", which makes it ignore its append-only
// file and start empty.
func (s *Server) RestartWith(args ...string) {
	s.tb.Helper()
	s.Kill()
	s.args = args
	s.start()
}

// RestartEmpty kills the server and starts it again on the same port with
// the same arguments but an empty directory, as on a host whose disk was
// replaced.
func (s *Server) RestartEmpty() {
	s.tb.Helper()
	s.Kill()
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		s.tb.Fatal(err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(s.dir, e.Name())); err != nil {
			s.tb.Fatal(err)
		}
	}
	s.start()
}

// StartReplica starts a private redis-server replicating primary (with
// the same durability settings plus extraArgs), and waits until primary
// counts it as a connected replica in sync.
func StartReplica(tb testing.TB, primary *Server, extraArgs ...string) *Server {
	tb.Helper()
	r := Start(tb, append([]string{"--replicaof", "127.0.0.1", strconv.Itoa(primary.port)}, extraArgs...)...)
	pc := redis.NewClient(&redis.Options{Addr: primary.Addr()})
	defer pc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// WAIT blocks, on Redis's own clock, until the replica has synced and
	// acknowledged every write so far (a marker written here).
	if err := pc.Set(ctx, "redistest:replica-sync", r.Addr(), 0).Err(); err != nil {
		tb.Fatalf("redistest: writing to %s: %v", primary.Addr(), err)
	}
	n, err := pc.Wait(ctx, 1, 10*time.Second).Result()
	if err != nil || n < 1 {
		info, _ := pc.Info(ctx, "replication").Result()
		tb.Fatalf("redistest: replica %s did not come online on %s (WAIT: %d, %v)\n%s", r.Addr(), primary.Addr(), n, err, info)
	}
	return r
}

// Promote makes a replica a primary (REPLICAOF NO ONE), as a failover
// does.
func (s *Server) Promote() {
	s.tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer c.Close()
	if err := c.SlaveOf(context.Background(), "NO", "ONE").Err(); err != nil {
		s.tb.Fatalf("redistest: promoting %s: %v", s.Addr(), err)
	}
}
