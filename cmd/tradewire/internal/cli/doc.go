// Package cli is the tradewire command line: the cobra command tree, the
// configuration loaded from flags and the environment, and the mapping
// from errors to exit codes.
//
// Run is the one entry point. main calls it with the process's
// environment and streams; tests call it with their own, plus transport
// options (a round tripper, a retry policy, a clock) so that nothing waits
// on real time or leaves the machine.
//
// # Adding a command
//
// A command is a func(*app) *cobra.Command registered in newRoot, in the
// file of its group (account.go, market.go, orders.go, fees.go, …). Its
// RunE is wrapped with app.run, which marks everything it returns as a
// runtime failure (anything cobra returns before RunE is a usage error,
// exit 2). A read command is a readSpec given to app.read, the one
// preamble: --output, the command's offline checks, the client, then its
// fetch and the one write of its report, whose JSON is the library's
// value (brokerjson.go) and whose table rounds money to the quote
// increment (money.go). A command that talks to the venue otherwise asks app.venue for the resolved base
// URL, signer and transport options, or app.transport for a ready
// *transport.Client; a configuration problem comes back as a *usageError
// naming the flag or variable. A simulated venue replaces the resolution
// by setting app.override (base URL, signer, and a round tripper in its
// options).
//
// # Exit codes
//
// exitCode is the one function that maps an error to an exit code; its
// table is in README.md and in the doc comment of exitCode.
package cli
