package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

const envSubprocessArgs = "TRADEWIRE_TEST_CLI_ARGS"

// TestCLISubprocess is not a test: run by runSubprocess, it is the
// tradewire command, as main runs it, with the arguments in
// TRADEWIRE_TEST_CLI_ARGS.
func TestCLISubprocess(t *testing.T) {
	raw := os.Getenv(envSubprocessArgs)
	if raw == "" {
		t.Skip("helper process for runSubprocess")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		os.Exit(99)
	}
	os.Exit(Run(context.Background(), args, Options{Getenv: os.Getenv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}))
}

// runSubprocess runs the command line in a process of its own, so that a
// crash (a SIGBUS from a mapped file) is seen as what it is instead of
// taking the test binary down.
func runSubprocess(t *testing.T, env map[string]string, args ...string) (code int, stderr string, signaled bool) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCLISubprocess$")
	cmd.Env = []string{envSubprocessArgs + "=" + string(raw), "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	err = cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	st := cmd.ProcessState
	return st.ExitCode(), errBuf.String(), !st.Exited()
}

// TestTruncatedStoreInASubprocess is the report, as a user runs it:
// truncate -s 16384 t.db; tradewire --store t.db intents. It used to die
// of SIGBUS (and the Go runtime's exit 2 read as a usage error); now it
// exits 2 with one line naming the file, and sends nothing.
func TestTruncatedStoreInASubprocess(t *testing.T) {
	t.Parallel()
	stores := badStores(t)
	srv, env := placeVenue(t)
	for _, name := range []string{"16384", "half"} {
		path := stores[name]
		for _, args := range [][]string{{"--store", path, "intents"}, append([]string{"--store", path}, append(append([]string{}, placeArgs...), "--idempotency-key", "k")...)} {
			code, stderr, signaled := runSubprocess(t, env, args...)
			if signaled || code != exitUsage || !strings.Contains(stderr, path) || !strings.Contains(stderr, "cut short") || strings.Count(stderr, "\n") != 1 {
				t.Errorf("%v: exit %d (signaled %v), stderr %q; want exit 2 and one line saying %s was cut short", args, code, signaled, stderr, path)
			}
		}
	}
	if n := len(srv.Ledger().Requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}
