// Package pgtest gives tests a real PostgreSQL: the shared primary and
// synchronous standby named by TRADEWIRE_TEST_POSTGRES_URL (started by
// with-postgres.sh for `make test` and .ci/run), or a private cluster a
// test can crash, promote and restart.
//
// Servers run from Debian's postgresql package (initdb, pg_ctl,
// pg_basebackup in /usr/lib/postgresql/*/bin or on PATH), on free
// loopback ports, in temporary directories. PostgreSQL refuses to run as
// root, so when the tests run as root the servers run as the postgres
// user the package creates. A password is required (scram-sha-256), so
// that tests can check it is never printed.
//
// Tests that need PostgreSQL never pass silently: when CI=true and none
// can be had they fail; elsewhere they skip, saying how to run them.
// Nothing here is safe for use outside tests.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// EnvURL names the environment variable holding the shared test
// PostgreSQL URL (both hosts, target_session_attrs=read-write).
const EnvURL = "TRADEWIRE_TEST_POSTGRES_URL"

// Role and Database are the role and database every cluster is made with.
const (
	Role     = "tradewire"
	Database = "tradewire"
)

// unavailable fails the test in CI and skips it elsewhere.
func unavailable(tb testing.TB, why string) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf("pgtest: %s (CI=true: tests that need PostgreSQL must not be skipped; .ci/run installs it)", why)
	}
	tb.Skipf("pgtest: %s; run `make test`, or set %s", why, EnvURL)
}

// URL returns the shared test PostgreSQL URL, or fails (CI) / skips the
// test when it is unset.
func URL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		unavailable(tb, EnvURL+" is not set")
	}
	return u
}

// Account returns a fresh account number (letters and digits) for one
// test: the stores keep each account's rows apart.
func Account(tb testing.TB) string {
	tb.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatal(err)
	}
	return "P" + strings.ToUpper(hex.EncodeToString(b[:]))
}

// Standby says what standby a Cluster has.
type Standby int

const (
	// NoStandby: a single server.
	NoStandby Standby = iota
	// SyncStandby: a synchronous standby (synchronous_standby_names '*',
	// synchronous_commit on): a commit returns once the standby has it.
	SyncStandby
	// AsyncStandby: an asynchronous standby; a failover can lose the last
	// commits.
	AsyncStandby
)

// Server is one postgres process of a Cluster.
type Server struct {
	Port int
	dir  string // data directory
	log  string
}

// Cluster is a primary and, maybe, a standby on loopback.
type Cluster struct {
	Primary, Standby *Server
	Password         string
	root             string
	bin              string
	asPostgres       bool
	// clock paces the waits on the servers, which run on the real clock.
	clock clockwork.Clock
}

// bindir finds the directory holding initdb, pg_ctl and pg_basebackup:
// Debian's newest /usr/lib/postgresql/N/bin, else initdb's on PATH.
func bindir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("PostgreSQL's initdb is not installed (apt-get install postgresql)")
}

func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// Start starts a private cluster (a primary and the standby asked for)
// and stops it when the test ends. Without PostgreSQL it fails (CI) or
// skips the test.
func Start(tb testing.TB, standby Standby) *Cluster {
	tb.Helper()
	c, err := StartCluster(standby)
	if err != nil {
		var missing *missingError
		if errors.As(err, &missing) {
			unavailable(tb, err.Error())
		}
		tb.Fatal(err)
	}
	tb.Cleanup(c.Stop)
	return c
}

type missingError struct{ err error }

func (e *missingError) Error() string { return e.err.Error() }

// StartCluster starts a cluster in a new temporary directory; Stop stops
// it and removes the directory.
func StartCluster(standby Standby) (*Cluster, error) {
	bin, err := bindir()
	if err != nil {
		return nil, &missingError{err}
	}
	c := &Cluster{bin: bin, asPostgres: os.Geteuid() == 0, clock: clockwork.NewRealClock()}
	var pw [12]byte
	rand.Read(pw[:])
	c.Password = "pw" + hex.EncodeToString(pw[:])
	c.root, err = os.MkdirTemp("", "tradewire-pg.")
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			c.Stop()
		}
	}()
	if err := c.own(c.root); err != nil {
		return nil, err
	}
	pwfile := filepath.Join(c.root, "pwfile")
	if err := os.WriteFile(pwfile, []byte(c.Password+"\n"), 0o600); err != nil {
		return nil, err
	}
	if err := c.own(pwfile); err != nil {
		return nil, err
	}
	c.Primary = &Server{Port: freePort(), dir: filepath.Join(c.root, "primary"), log: filepath.Join(c.root, "primary.log")}
	if err := c.run("initdb", "-D", c.Primary.dir, "-U", Role, "--pwfile="+pwfile, "-A", "scram-sha-256", "-E", "UTF8", "--no-instructions"); err != nil {
		return nil, err
	}
	conf := fmt.Sprintf(`
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = '%s'
wal_level = replica
max_wal_senders = 10
wal_keep_size = '64MB'
synchronous_commit = on
fsync = on
max_connections = 200
shared_buffers = '32MB'
`, c.Primary.Port, c.root)
	if err := appendFile(filepath.Join(c.Primary.dir, "postgresql.conf"), conf); err != nil {
		return nil, err
	}
	if err := c.startServer(c.Primary); err != nil {
		return nil, err
	}
	if err := c.psql(c.Primary, "postgres", "CREATE DATABASE "+Database); err != nil {
		return nil, err
	}
	if standby != NoStandby {
		c.Standby = &Server{Port: freePort(), dir: filepath.Join(c.root, "standby"), log: filepath.Join(c.root, "standby.log")}
		if err := c.runEnv([]string{"PGPASSWORD=" + c.Password}, "pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(c.Primary.Port),
			"-U", Role, "-D", c.Standby.dir, "-R", "-X", "stream", "--checkpoint=fast"); err != nil {
			return nil, err
		}
		// The standby names itself to the primary; as a primary after a
		// promotion, it has no synchronous standby of its own.
		if err := appendFile(filepath.Join(c.Standby.dir, "postgresql.conf"), fmt.Sprintf("\nport = %d\ncluster_name = 'standby'\nsynchronous_standby_names = ''\n", c.Standby.Port)); err != nil {
			return nil, err
		}
		if err := c.startServer(c.Standby); err != nil {
			return nil, err
		}
		// Synchronous only now: with no standby yet, every commit would
		// wait for one.
		want := "async"
		if standby == SyncStandby {
			want = "sync"
			if err := c.psql(c.Primary, "postgres", "ALTER SYSTEM SET synchronous_standby_names = '*'"); err != nil {
				return nil, err
			}
			if err := c.psql(c.Primary, "postgres", "SELECT pg_reload_conf()"); err != nil {
				return nil, err
			}
		}
		if err := c.awaitReplication(want); err != nil {
			return nil, err
		}
	}
	ok = true
	return c, nil
}

// awaitReplication waits until the primary reports its standby streaming
// in state want ("sync" or "async").
func (c *Cluster) awaitReplication(want string) error {
	if c.await(30*time.Second, 50*time.Millisecond, func() bool {
		out, err := c.query(c.Primary, "postgres", "SELECT sync_state FROM pg_stat_replication WHERE state = 'streaming'")
		return err == nil && strings.TrimSpace(out) == want
	}) {
		return nil
	}
	return fmt.Errorf("pgtest: the standby did not stream as %s within 30 s", want)
}

// await asks done every interval until it says yes, for at most within
// on the cluster's clock, and reports whether it did.
func (c *Cluster) await(within, every time.Duration, done func() bool) bool {
	for deadline := c.clock.Now().Add(within); c.clock.Now().Before(deadline); c.clock.Sleep(every) {
		if done() {
			return true
		}
	}
	return false
}

// URL is the cluster's connection string: both hosts, the primary first,
// with target_session_attrs=read-write, so a client reaches whichever is
// primary.
func (c *Cluster) URL() string {
	hosts := fmt.Sprintf("127.0.0.1:%d", c.Primary.Port)
	if c.Standby != nil {
		hosts += fmt.Sprintf(",127.0.0.1:%d", c.Standby.Port)
	}
	return fmt.Sprintf("postgres://%s:%s@%s/%s?sslmode=disable&target_session_attrs=read-write", Role, c.Password, hosts, Database)
}

// ServerURL is the connection string of one server of the cluster.
func (c *Cluster) ServerURL(s *Server) string {
	return fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/%s?sslmode=disable", Role, c.Password, s.Port, Database)
}

// KillPrimary ends the primary's postmaster with SIGKILL, as a crash of
// its host would, and waits for it to go. (Its backends go with it: they
// exit when the postmaster dies.)
func (c *Cluster) KillPrimary() error { return c.kill(c.Primary) }

// kill sends SIGKILL to s's postmaster and its children.
func (c *Cluster) kill(s *Server) error {
	b, err := os.ReadFile(filepath.Join(s.dir, "postmaster.pid"))
	if err != nil {
		return fmt.Errorf("pgtest: reading the postmaster's pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		return fmt.Errorf("pgtest: postmaster.pid: %w", err)
	}
	// Every backend of the server: children of the postmaster.
	kids, _ := exec.Command("pgrep", "-P", strconv.Itoa(pid)).Output()
	syscall.Kill(pid, syscall.SIGKILL)
	for _, f := range strings.Fields(string(kids)) {
		if k, err := strconv.Atoi(f); err == nil {
			syscall.Kill(k, syscall.SIGKILL)
		}
	}
	if c.await(2*time.Second, 10*time.Millisecond, func() bool { return syscall.Kill(pid, 0) != nil }) {
		return nil
	}
	return fmt.Errorf("pgtest: postmaster %d still alive after SIGKILL", pid)
}

// Promote promotes the standby and waits until it accepts writes.
func (c *Cluster) Promote() error {
	if c.Standby == nil {
		return errors.New("pgtest: no standby to promote")
	}
	if err := c.run("pg_ctl", "-D", c.Standby.dir, "-w", "-t", "30", "promote"); err != nil {
		return err
	}
	if c.await(30*time.Second, 20*time.Millisecond, func() bool {
		out, err := c.query(c.Standby, "postgres", "SELECT pg_is_in_recovery()")
		return err == nil && strings.TrimSpace(out) == "f"
	}) {
		return nil
	}
	return errors.New("pgtest: the promoted standby still in recovery after 30 s")
}

// Stop stops every server (immediate mode) and removes the cluster's
// directory.
func (c *Cluster) Stop() {
	for _, s := range []*Server{c.Primary, c.Standby} {
		if s == nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(s.dir, "postmaster.pid")); err == nil {
			c.run("pg_ctl", "-D", s.dir, "-m", "immediate", "-w", "-t", "10", "stop")
		}
	}
	if c.root != "" {
		os.RemoveAll(c.root)
	}
}

// Logs returns the servers' logs, for a failing test to print.
func (c *Cluster) Logs() string {
	var b strings.Builder
	for _, s := range []*Server{c.Primary, c.Standby} {
		if s == nil {
			continue
		}
		out, _ := os.ReadFile(s.log)
		fmt.Fprintf(&b, "== %s\n%s\n", s.log, out)
	}
	return b.String()
}

func (c *Cluster) startServer(s *Server) error {
	if err := c.run("pg_ctl", "-D", s.dir, "-l", s.log, "-w", "-t", "60", "start"); err != nil {
		out, _ := os.ReadFile(s.log)
		return fmt.Errorf("%w\n%s", err, out)
	}
	return nil
}

// psql runs sql on database db of s.
func (c *Cluster) psql(s *Server, db, sql string) error {
	_, err := c.query(s, db, sql)
	return err
}

// query runs sql on database db of s and returns its unaligned output.
func (c *Cluster) query(s *Server, db, sql string) (string, error) {
	psql, err := exec.LookPath("psql")
	if err != nil {
		psql = filepath.Join(c.bin, "psql")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, psql, "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", strconv.Itoa(s.Port), "-U", Role, "-d", db, "-c", sql)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+c.Password, "PGCONNECT_TIMEOUT=5")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("pgtest: psql %q: %v: %s", sql, err, out)
	}
	return string(out), nil
}

func (c *Cluster) run(name string, args ...string) error { return c.runEnv(nil, name, args...) }

// runEnv runs a PostgreSQL program, as the postgres user when running as
// root.
func (c *Cluster) runEnv(env []string, name string, args ...string) error {
	path := filepath.Join(c.bin, name)
	var cmd *exec.Cmd
	if c.asPostgres {
		full := append([]string{"-u", "postgres", "--", "env"}, env...)
		full = append(full, path)
		cmd = exec.Command("runuser", append(full, args...)...)
	} else {
		cmd = exec.Command(path, args...)
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Dir = c.root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgtest: %s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// own gives path to the postgres user when running as root.
func (c *Cluster) own(path string) error {
	if !c.asPostgres {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return &missingError{fmt.Errorf("running as root, but there is no postgres user to run PostgreSQL as (apt-get install postgresql): %v", err)}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chmod(path, 0o700); err != nil {
		return err
	}
	return os.Chown(path, uid, gid)
}

func appendFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// freePort returns a loopback port nothing listens on now.
func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
