// Package docs holds the tests that keep README.md and docs/*.md true:
// every Go snippet is quoted from a program under examples/ (which make
// test builds and runs), every JSON plan parses, every relative link
// resolves, every tradewire command line names commands and flags that
// exist, and the sandbox's shell blocks run as written.
package docs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tradewire/tradewire/venue"
)

// root is the module's root, seen from this package's directory.
const root = ".."

// built is the tradewire the tests build from this tree, once.
var built struct {
	once sync.Once
	dir  string
	err  error
}

// tradewireDir returns the directory holding the tradewire built from
// this tree, building it on the first call.
func tradewireDir(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "tradewire-docs")
		if built.err != nil {
			return
		}
		args := []string{"build", "-o", filepath.Join(built.dir, "tradewire")}
		if raceEnabled {
			args = append(args, "-race") // reuses the packages make test compiled
		}
		build := exec.Command("go", append(args, "./cmd/tradewire")...)
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build ./cmd/tradewire: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// block is one fenced code block of a Markdown file.
type block struct {
	file string
	line int    // 1-based line of the opening fence
	lang string // the fence's info string
	text []string
}

// mdFiles returns README.md and every docs/*.md.
func mdFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(root, "README.md")}, files...)
}

var fence = regexp.MustCompile("^(\\s*)```(\\S*)\\s*$")

// blocks returns the fenced code blocks of a Markdown file, with the
// fence's indentation taken off their lines.
func blocks(t *testing.T, file string) []block {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []block
	var cur *block
	var indent string
	for i, l := range strings.Split(string(data), "\n") {
		m := fence.FindStringSubmatch(l)
		switch {
		case cur == nil && m != nil:
			cur, indent = &block{file: file, line: i + 1, lang: m[2]}, m[1]
		case cur != nil && m != nil && m[2] == "":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text = append(cur.text, strings.TrimPrefix(l, indent))
		}
	}
	if cur != nil {
		t.Fatalf("%s:%d: a code block is never closed", file, cur.line)
	}
	return out
}

// trimmed returns the lines with their surrounding white space removed.
func trimmed(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimSpace(l)
	}
	return out
}

// contains reports whether want occurs in have as a run of lines.
func contains(have, want []string) bool {
	for i := 0; i+len(want) <= len(have); i++ {
		ok := true
		for j := range want {
			if have[i+j] != want[j] {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// TestGoSnippetsQuoteExamples: every Go block in the README and docs/ is a
// verbatim excerpt (indentation aside) of a file under examples/, so it
// compiles and runs wherever make test runs the examples.
func TestGoSnippetsQuoteExamples(t *testing.T) {
	var sources [][]string
	err := filepath.WalkDir(filepath.Join(root, "examples"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sources = append(sources, trimmed(strings.Split(string(data), "\n")))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range mdFiles(t) {
		for _, b := range blocks(t, f) {
			if b.lang != "go" {
				continue
			}
			n++
			want := trimmed(b.text)
			found := false
			for _, src := range sources {
				if contains(src, want) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s:%d: this Go block is not quoted verbatim from a file under examples/:\n%s",
					b.file, b.line, strings.Join(b.text, "\n"))
			}
		}
	}
	if n == 0 {
		t.Fatal("no Go blocks found: the test reads nothing")
	}
}

// TestJSONBlocksParse: every JSON block is a fault plan or a rate-limits
// file that sim serve would accept.
func TestJSONBlocksParse(t *testing.T) {
	n := 0
	for _, f := range mdFiles(t) {
		for _, b := range blocks(t, f) {
			if b.lang != "json" {
				continue
			}
			n++
			data := []byte(strings.Join(b.text, "\n"))
			var err error
			if bytes.Contains(data, []byte(`"per_minute"`)) {
				_, err = venue.ParseRateLimits(data)
			} else {
				_, err = venue.ParseFaultPlan(data)
			}
			if err != nil {
				t.Errorf("%s:%d: %v", b.file, b.line, err)
			}
		}
	}
	if n < 2 {
		t.Fatalf("%d JSON blocks found, want the fault plan and the rate limits", n)
	}
}

var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// slug is GitHub's anchor for a heading.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestRelativeLinksResolve: every relative link names a file that exists,
// and a #fragment a heading in it.
func TestRelativeLinksResolve(t *testing.T) {
	for _, f := range mdFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			file := f
			if path != "" {
				file = filepath.Join(filepath.Dir(f), path)
			}
			if _, err := os.Stat(file); err != nil {
				t.Errorf("%s: link %s: %v", f, target, err)
				continue
			}
			if frag == "" {
				continue
			}
			body, err := os.ReadFile(file)
			if err != nil {
				t.Errorf("%s: link %s: %v", f, target, err)
				continue
			}
			found := false
			for _, l := range strings.Split(string(body), "\n") {
				if h, ok := strings.CutPrefix(strings.TrimLeft(l, "#"), " "); ok && strings.HasPrefix(l, "#") && slug(h) == frag {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: link %s: no heading %q in %s", f, target, frag, file)
			}
		}
	}
}

// need returns the path of a program the sandbox blocks use. A missing one
// skips the test, but fails it under CI=true, which make test sets after
// checking for it.
func need(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is needed (Debian: sudo apt-get install %s): %v", name, name, err)
		}
		t.Skipf("no %s: %v", name, err)
	}
	return p
}

// TestSandboxBlocksRun runs, as written, every shell block that starts
// tradewire sim serve, with the file's Python block as bot.py, a tradewire
// built from this tree first on PATH, and the pure-Python PyNaCl stand-in of
// venue/testdata/python on PYTHONPATH.
func TestSandboxBlocksRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds tradewire and runs the simulated venue")
	}
	need(t, "curl")
	need(t, "python3")
	bash := need(t, "bash")
	bin := tradewireDir(t)
	shims, err := filepath.Abs(filepath.Join(root, "venue", "testdata", "python"))
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TRADEWIRE_") && !strings.HasPrefix(kv, "SSL_CERT_FILE=") &&
			!strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "PYTHONPATH=") {
			env = append(env, kv)
		}
	}
	env = append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"PYTHONPATH="+shims, "PYTHONDONTWRITEBYTECODE=1")

	n := 0
	for _, f := range mdFiles(t) {
		bs := blocks(t, f)
		var python []string
		for _, b := range bs {
			if b.lang == "python" {
				python = b.text
			}
		}
		for _, b := range bs {
			if b.lang != "sh" || !strings.Contains(strings.Join(b.text, "\n"), "tradewire sim serve") {
				continue
			}
			n++
			t.Run(fmt.Sprintf("%s:%d", filepath.Base(f), b.line), func(t *testing.T) {
				dir := t.TempDir()
				if python != nil {
					if err := os.WriteFile(filepath.Join(dir, "bot.py"), []byte(strings.Join(python, "\n")), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				out := runShell(t, bash, dir, env, strings.Join(b.text, "\n"))
				if !strings.Contains(out, "400\n") {
					t.Errorf("the unsigned request did not answer 400:\n%s", out)
				}
				if !strings.Contains(out, `"account_number":"TW0000000001"`) {
					t.Errorf("tradewire api did not read the account:\n%s", out)
				}
				if python != nil && strings.Contains(strings.Join(b.text, "\n"), "python3 bot.py") &&
					!strings.Contains(out, "TW0000000001 filled\n") {
					t.Errorf("bot.py did not place a filled order:\n%s", out)
				}
			})
		}
	}
	if n == 0 {
		t.Fatal("no sandbox shell blocks found")
	}
}

// runShell runs script with bash -e in dir, in a process group of its own
// that is killed when it ends (the sandbox server included, if the script
// failed before its kill), and returns its standard output.
func runShell(t *testing.T, bash, dir string, env []string, script string) string {
	t.Helper()
	// A bound on a hung server or interpreter, not a wait: a run takes a few seconds.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "-e", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// Files, not pipes: a server left running by a failed script holds
	// its copies open, and Run would wait for a pipe to close.
	stdout, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // leftovers of a failed script
	}
	out, _ := os.ReadFile(stdout.Name())
	if err != nil {
		errOut, _ := os.ReadFile(stderr.Name())
		t.Fatalf("the block failed: %v (%v)\nstdout:\n%s\nstderr:\n%s", err, ctx.Err(), out, errOut)
	}
	return string(out)
}

// commandLines returns every tradewire command line of the shell blocks,
// continuation lines joined, cut before a pipe, a redirection, a
// background & or a comment outside quotes.
func commandLines(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range mdFiles(t) {
		for _, b := range blocks(t, f) {
			if b.lang != "sh" {
				continue
			}
			joined := strings.ReplaceAll(strings.Join(b.text, "\n"), "\\\n", " ")
			for _, l := range strings.Split(joined, "\n") {
				if !strings.HasPrefix(l, "tradewire ") {
					continue
				}
				out[cutShell(l)] = fmt.Sprintf("%s:%d", f, b.line)
			}
		}
	}
	return out
}

// cutShell returns l up to its first |, >, &, ; or # outside quotes.
func cutShell(l string) string {
	var quote rune
	for i, r := range l {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case strings.ContainsRune("|>&;#", r):
			return strings.TrimSpace(l[:i])
		}
	}
	return strings.TrimSpace(l)
}

// TestCommandLinesParse: every tradewire command line in the README and
// docs/ names a command and flags that exist (run with --help appended,
// which parses them and runs nothing).
func TestCommandLinesParse(t *testing.T) {
	bash := need(t, "bash")
	bin := tradewireDir(t)
	lines := commandLines(t)
	if len(lines) < 10 {
		t.Fatalf("%d command lines found", len(lines))
	}
	for line, where := range lines {
		cmd := exec.Command(bash, "-c", line+" --help")
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: %s: %v\n%s", where, line, err, out)
		}
	}
}
