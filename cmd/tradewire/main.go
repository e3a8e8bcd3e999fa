// Command tradewire talks to the Robinhood Crypto Trading API v2 safely.
//
// Run "tradewire --help" for the commands, and see README.md for the
// configuration, the retry rules and the exit codes.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/tradewire/tradewire/cmd/tradewire/internal/cli"
)

func main() {
	// Ctrl-C, a supervisor's stop and a closed terminal or ssh session
	// (SIGHUP) all end the command through its context: a write under
	// way ends with exit 5 and its line, not a silent death.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := cli.Run(ctx, os.Args[1:], cli.Options{
		Getenv: os.Getenv,
		Stdin:  os.Stdin,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
	})
	stop()
	os.Exit(code)
}
