package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"github.com/spf13/cobra"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/internal/wire"
)

// The read commands, one group a file: account and holdings
// (account.go), pairs, quote and estimate (market.go), orders (orders.go),
// fees (fees.go) and preview (preview.go); order get is in order.go. Each
// runs through app.read, the one preamble: --output, then the command's
// own offline checks, then the client, so that a usage error sends
// nothing; and stdout is written only once everything was read, so that a
// failure leaves it empty.

// readSpec is one read command for app.read.
type readSpec struct {
	// check validates the arguments and flags offline, after --output and
	// before the client is built (which in a fleet can read the accounts
	// list): nothing is sent when it fails. Nil checks nothing.
	check func() error
	// sweep, when set, titles a progress bar on stderr ("fees", "orders")
	// over a sweep of pages of orders, fed by the client's rate limiter
	// and by readQuery.pages.
	sweep string
	// fetch reads from the venue and returns what to print. A report
	// returned with an error is printed, then the error is returned (a
	// preview that found violations); a nil report prints nothing.
	fetch func(ctx context.Context, q *readQuery) (*report, error)
}

// defaultMaxPages is --max-pages' default: broker.Config.PageCap's.
const defaultMaxPages = 20

// readQuery is what a read command's fetch works with.
type readQuery struct {
	c      *broker.Client
	format string
	// pages are the call options of a sweep's listing: its progress.
	pages []broker.Paging
}

// read runs a read command: the shared preamble (output format, offline
// checks, rate limit and progress bar for a sweep, client), spec.fetch,
// and the one write of its report.
func (a *app) read(cmd *cobra.Command, spec readSpec) error {
	format, err := a.outputFormat()
	if err != nil {
		return err
	}
	if spec.check != nil {
		if err := spec.check(); err != nil {
			return err
		}
	}
	q := &readQuery{format: format}
	var progress *sweepProgress
	if spec.sweep != "" {
		rate, burst, err := a.rateLimit()
		if err != nil {
			return err
		}
		progress = a.newSweepProgress(spec.sweep, "orders")
		defer progress.done()
		q.pages = []broker.Paging{progress.callOption()}
		if q.c, err = a.brokerClient(progress.transportOptions(rate, burst)); err != nil {
			return err
		}
	} else if q.c, err = a.brokerClient(); err != nil {
		return err
	}
	r, err := spec.fetch(cmd.Context(), q)
	if progress != nil {
		progress.done() // the bar is off stderr before anything is printed
	}
	if r != nil {
		if werr := r.write(a.opts.Stdout, format); werr != nil {
			return werr
		}
	}
	return err
}

// table reports whether the output is the table a person reads, where
// money is rounded to the quote increment (money.go).
func (q *readQuery) table() bool { return q.format == outputTable }

// parseDecimal parses a decimal flag value exactly (never through
// float64) with the library's one rule for decimals sent (wire.ParseAmount:
// plain digits, at most 18 decimal places and 20 before the point, no
// exponent or sign but minus), naming the flag when it breaks it. Spaces
// around the value are trimmed, as for every flag, and its message says so.
func parseDecimal(flag, s string) (decimal.Decimal, error) {
	d, err := wire.ParseAmount(flag, strings.TrimSpace(s))
	var ae *wire.AmountError
	if errors.As(err, &ae) {
		return decimal.Decimal{}, usagef("%s: %s; spaces around the value are trimmed", flag, ae.Reason)
	}
	return d, err
}

// parseSince reads --since: a duration back from now (Go syntax, plus d
// for days) or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := parseWindow(s)
	if err != nil {
		return time.Time{}, usagef("--since %q: want a duration back from now (90m, 36h, 7d) or an RFC 3339 time (2026-03-01T00:00:00Z)", s)
	}
	return now.Add(-d), nil
}

// maxDays bounds a duration in days so that it fits a time.Duration.
const maxDays = 100_000

// parseWindow reads a positive duration in Go syntax (90m, 36h, 1h30m)
// or with a leading whole number of days (30d, 1d12h). Its errors say
// what is wrong without repeating the value.
func parseWindow(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i >= 0 {
		n, err := strconv.Atoi(s[:i])
		if err != nil || n < 0 || n > maxDays {
			return 0, fmt.Errorf("want a whole number of days before d, at most %d (30d, 1d12h)", maxDays)
		}
		days, s = time.Duration(n)*24*time.Hour, s[i+1:]
	}
	var rest time.Duration
	if s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, errors.New("want a duration such as 30d, 36h or 90m")
		}
		rest = d
	}
	total := days + rest
	if total <= 0 || rest < 0 || total < days {
		return 0, errors.New("must be positive")
	}
	return total, nil
}

// checkMaxPages refuses a page cap below 1 before anything is sent.
func checkMaxPages(n int) error {
	if n < 1 {
		return usagef("--max-pages %d: want 1 or more", n)
	}
	return nil
}

// pageCapError is a listing that stopped at its page cap: one line that
// says what to do, wrapping broker's *PageCapError (exit 1).
type pageCapError struct {
	msg string
	err *broker.PageCapError
}

func (e *pageCapError) Error() string { return e.msg }
func (e *pageCapError) Unwrap() error { return e.err }

// listError explains a listing's page cap; other errors pass unchanged.
func listError(cmd string, err error) error {
	var pc *broker.PageCapError
	if errors.As(err, &pc) {
		return &pageCapError{
			msg: fmt.Sprintf("%s: more than %d pages; stopped at the cap rather than print a partial list: narrow the query or raise --max-pages", cmd, pc.Pages),
			err: pc,
		}
	}
	return err
}

// upper upper-cases symbols and asset codes, as the venue spells them.
func upper(args []string) []string {
	out := make([]string, len(args))
	for i, s := range args {
		out[i] = strings.ToUpper(strings.TrimSpace(s))
	}
	return out
}
