package redistest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// The protocol between a test and the helper processes it starts: each
// process prints readyLine when set up, waits for a line on stdin, runs,
// and prints resultPrefix followed by its result as JSON.
const (
	readyLine    = "READY"
	resultPrefix = "RESULT "
)

// Processes are OS processes running the test binary's TestHelperProcess,
// released together so that they contend for real.
type Processes struct {
	procs []helperProc
}

type helperProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

// StartProcesses starts n copies of the test binary running
// TestHelperProcess with env added to the environment, and waits until
// every one is set up. They are killed when the test ends.
func StartProcesses(tb testing.TB, n int, env ...string) *Processes {
	tb.Helper()
	ps := &Processes{}
	for i := 0; i < n; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), env...)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			tb.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			tb.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		ps.procs = append(ps.procs, helperProc{cmd, stdin, bufio.NewScanner(stdout)})
	}
	for i, p := range ps.procs {
		ready := false
		for !ready && p.out.Scan() {
			ready = p.out.Text() == readyLine
		}
		if !ready {
			tb.Fatalf("redistest: helper process %d did not get ready", i)
		}
	}
	return ps
}

// Release lets every process run, then waits for each to end and decodes
// its result into result(i), a pointer.
func (ps *Processes) Release(tb testing.TB, result func(i int) any) {
	tb.Helper()
	ps.Go()
	ps.Wait(tb, result)
}

// Go lets every process run, without waiting for them.
func (ps *Processes) Go() {
	for _, p := range ps.procs {
		io.WriteString(p.stdin, "go\n")
	}
}

// Signal sends sig to process i: syscall.SIGSTOP to freeze it as a long
// GC pause or a descheduled VM would, syscall.SIGCONT to resume it.
func (ps *Processes) Signal(tb testing.TB, i int, sig os.Signal) {
	tb.Helper()
	if err := ps.procs[i].cmd.Process.Signal(sig); err != nil {
		tb.Fatalf("redistest: signalling helper process %d: %v", i, err)
	}
}

// Wait waits for every process released by Go to end and decodes its
// result into result(i), a pointer.
func (ps *Processes) Wait(tb testing.TB, result func(i int) any) {
	tb.Helper()
	for i, p := range ps.procs {
		found := false
		for p.out.Scan() {
			if line, ok := strings.CutPrefix(p.out.Text(), resultPrefix); ok {
				if err := json.Unmarshal([]byte(line), result(i)); err != nil {
					tb.Fatal(err)
				}
				found = true
			}
		}
		if err := p.cmd.Wait(); err != nil || !found {
			tb.Fatalf("redistest: helper process %d: %v (result found: %v)", i, err, found)
		}
	}
}

// AwaitRelease is a helper process's side of the start: it says it is
// ready and waits to be released.
func AwaitRelease() error {
	fmt.Println(readyLine)
	_, err := bufio.NewReader(os.Stdin).ReadString('\n')
	return err
}

// ServeHelper runs a helper process's work when the environment variable
// envVar holds role, prints its result, and exits; otherwise the test is
// skipped, since TestHelperProcess is not a test of its own.
func ServeHelper(t *testing.T, envVar, role string, run func() (any, error)) {
	if os.Getenv(envVar) != role {
		t.Skip("helper process, started by the fleet tests")
	}
	res, err := run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(2)
	}
	b, _ := json.Marshal(res)
	fmt.Printf("%s%s\n", resultPrefix, b)
	os.Exit(0)
}

// Setup returns a client of the shared Redis and a fresh account namespace
// in it, for a test's keys.
func Setup(tb testing.TB) (*redis.Client, string) {
	tb.Helper()
	return Client(tb), Account(tb, URL(tb))
}

// Tally is what one helper process of a fleet reports: its requests
// answered, given up on after 429s, and failed otherwise (with why).
type Tally struct {
	OK, Throttled, Failed int
	Errors                []string
}

// Add counts one request's outcome: throttled says err is the client
// giving up after 429s. It is not safe for concurrent use.
func (t *Tally) Add(err error, throttled bool) {
	switch {
	case err == nil:
		t.OK++
	case throttled:
		t.Throttled++
	default:
		t.Failed++
		t.Errors = append(t.Errors, err.Error())
	}
}
