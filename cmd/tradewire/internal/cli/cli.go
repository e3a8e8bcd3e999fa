package cli

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/jonboulle/clockwork"
	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/metric"

	"github.com/tradewire/tradewire/transport"
)

// Options is what Run needs from the process: main passes the real
// environment and streams, tests pass their own.
type Options struct {
	// Getenv reads the environment (os.Getenv in main). Nil reads nothing.
	Getenv func(string) string
	// Stdin is read by --data @-. Nil reads as empty.
	Stdin io.Reader
	// Stdout receives a command's output; Stderr the one error line and
	// any logs. Nil discards.
	Stdout, Stderr io.Writer
	// Clock, when set, is the clock every client signs and waits with
	// (default: the real clock).
	Clock clockwork.Clock
	// TransportConfig's set fields win over the transport configuration
	// the CLI derives from its flags: tests inject a round tripper or a
	// fast retry policy here.
	TransportConfig transport.Config
}

// app is one invocation's state, shared by every command.
type app struct {
	opts  Options
	root  *cobra.Command
	flags globalFlags
	// limitFlags are the risk-limit flags (limits.go).
	limitFlags limitFlags
	// override, when set, replaces the base URL and credentials resolved
	// from flags and the environment: a simulated venue (--sim) sets it
	// with its own base URL, signer and round tripper.
	override *venueConfig
	// running is set once a command's RunE starts: errors from before
	// then are cobra's usage errors.
	running bool
	// closers release what commands opened (a fleet's Redis connection).
	closers []func() error
	// simClk is the --sim run's clock, made on first use (simClock).
	simClk clockwork.Clock
	// meterProvider, set by --metrics-addr (metrics.go), is the transport's
	// transport.Config.MeterProvider; nil: no metrics.
	meterProvider metric.MeterProvider
}

// Run runs the tradewire command line with args (without the program
// name) and returns the process's exit code. It prints a command's output
// on opts.Stdout and, on failure, exactly one line on opts.Stderr that
// names the cause and holds no secret.
func Run(ctx context.Context, args []string, opts Options) int {
	if opts.Stdin == nil {
		opts.Stdin = strings.NewReader("")
	}
	if opts.Stdout == nil {
		opts.Stdout = io.Discard
	}
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	a := &app{opts: opts}
	a.root = newRoot(a)
	a.root.SetArgs(append([]string{}, args...))
	a.root.SetIn(opts.Stdin)
	a.root.SetOut(opts.Stdout)
	a.root.SetErr(opts.Stderr)

	err := a.root.ExecuteContext(ctx)
	for _, c := range a.closers {
		_ = c()
	}
	if err != nil && !a.running {
		var ue *usageError
		if !errors.As(err, &ue) {
			err = &usageError{msg: err.Error() + " (see tradewire --help)"}
		}
	}
	code := exitCode(err)
	if err != nil {
		_, _ = io.WriteString(opts.Stderr, errorLine(err, a.secrets()))
	}
	return code
}

func newRoot(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "tradewire",
		Short: "Talk to the Robinhood Crypto Trading API v2 safely",
		Long: `tradewire talks to the Robinhood Crypto Trading API v2 and never does
something it cannot take back: GETs are retried, writes are sent once.

Credentials come from the environment or a file, never from a flag's value:
TRADEWIRE_API_KEY (or --api-key), and TRADEWIRE_PRIVATE_KEY (base64) or
TRADEWIRE_PRIVATE_KEY_FILE (or --private-key-file, mode 0600).

Exit codes: 0 success, 1 other failure, 2 usage or configuration error
(nothing sent), 3 not found, 4 gave up after retries or a service it needs
(the fleet's Redis) is unavailable: try later, 5 unknown outcome (a write
may have taken effect: never re-place under a new key), 6 rejected by the
venue.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          noArgs,
		// Runnable, so that an unknown command reaches noArgs (exit 2)
		// instead of printing help (exit 0).
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	// "tradewire completion" is ours (completion.go), with its arguments
	// checked as every command's are.
	root.CompletionOptions.DisableDefaultCmd = true
	root.Version = buildVersion()
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return describeFlagError(err) })
	a.addGlobalFlags(root)
	a.addSimFlag(root)
	a.addOutputFlag(root)
	root.AddCommand(
		newAPICmd(a),
		newAccountCmd(a),
		newHoldingsCmd(a),
		newPairsCmd(a),
		newQuoteCmd(a),
		newEstimateCmd(a),
		newOrdersCmd(a),
		newOrderCmd(a),
		newWatchCmd(a),
		newFeesCmd(a),
		newPreviewCmd(a),
		newIntentsCmd(a),
		newRecoverCmd(a),
		newHaltCmd(a),
		newResumeCmd(a),
		newSimCmd(a),
		newDemoCmd(a),
		newDoctorCmd(a),
		newCompletionCmd(a),
	)
	return root
}

// run wraps a command's RunE: whatever it returns is a runtime outcome,
// classified by exitCode.
func (a *app) run(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		a.running = true
		return fn(cmd, args)
	}
}

// noArgs refuses positional arguments without echoing them: one of them
// might be a pasted secret.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unknown command or unexpected argument for %q (see %s --help)", cmd.CommandPath(), cmd.CommandPath())
	}
	return nil
}

// oneArg requires exactly one positional argument, described by what.
func oneArg(command, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usagef("%s: want one %s got %d argument(s)", command, what, len(args))
		}
		return nil
	}
}
