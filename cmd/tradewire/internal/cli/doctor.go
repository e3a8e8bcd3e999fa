package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
)

// Thresholds the doctor judges the clock by. The venue refuses a
// signature more than signing.ValidFor (30 s) from its own clock; the
// client corrects for the offset it measures, but a large one means the
// machine's clock is wrong and everything else that reads it is too.
const (
	doctorClockWarn = 2 * time.Second
	doctorClockFail = signing.ValidFor
	doctorRTTWarn   = 2 * time.Second
)

// doctorProblems is the error doctor returns when a check failed: the
// lines already say what is wrong and how to fix it.
type doctorProblems struct{ n int }

func (e *doctorProblems) Error() string {
	if e.n == 1 {
		return "doctor: 1 check failed (see above)"
	}
	return fmt.Sprintf("doctor: %d checks failed (see above)", e.n)
}

// doctorReport collects the plain lines doctor prints: "ok", "warn" or
// "FAIL", the check, what was found, and for a problem how to fix it.
type doctorReport struct {
	w        io.Writer
	failures int
}

func (d *doctorReport) line(status, check, detail, fix string) {
	s := fmt.Sprintf("%-4s  %-12s %s", status, check, detail)
	if fix != "" {
		s += "\n      " + strings.Repeat(" ", 12) + " fix: " + fix
	}
	fmt.Fprintln(d.w, s)
}

func (d *doctorReport) ok(check, detail string)        { d.line("ok", check, detail, "") }
func (d *doctorReport) warn(check, detail, fix string) { d.line("warn", check, detail, fix) }
func (d *doctorReport) fail(check, detail, fix string) {
	d.failures++
	d.line("FAIL", check, detail, fix)
}

func newDoctorCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check credentials, clock, connection, account and orders (read-only)",
		Long: `doctor checks, without changing anything at the venue, that tradewire can
trade: the credentials load (and the key file is private), a fleet's Redis
(--redis-url) or PostgreSQL (--postgres-url: its schema version and what its
replication lets the intent store vouch for) answers, the venue answers and over which protocol, how far this machine's clock is from the
venue's and the round-trip time, that the account reads and is tradable,
and that a page of orders reads. Each line says ok, warn or FAIL; a
problem line says how to fix it. Exit 0 when nothing failed.`,
		Args: noArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			var out strings.Builder
			d := &doctorReport{w: &out}
			err := a.doctor(cmd.Context(), d)
			// The report is the output even when a check failed: print
			// it before the one error line.
			_, _ = io.WriteString(a.opts.Stdout, redact(out.String(), a.secrets()))
			if err != nil {
				return err
			}
			if d.failures > 0 {
				return &doctorProblems{n: d.failures}
			}
			return nil
		}),
	}
}

// doctor runs every check in order. It returns an error only when the
// checks cannot go on (nothing to sign with); failed checks are counted
// in d.
func (a *app) doctor(ctx context.Context, d *doctorReport) error {
	v, err := a.venue()
	if err != nil {
		d.fail("credentials", err.Error(), "set "+envAPIKey+" and "+envPrivateKey+" or "+envPrivateKeyFile+" (mode 0600); see tradewire --help")
		return err
	}
	d.ok("credentials", "API key and private key loaded (key "+v.signer.KeyID()+")")
	d.ok("venue", v.baseURL)

	var mu sync.Mutex
	var attempts []transport.Attempt
	observe := transport.Config{Observer: func(at transport.Attempt) {
		mu.Lock()
		attempts = append(attempts, at)
		mu.Unlock()
	}}
	c, err := a.brokerClient(observe)
	if err != nil {
		var down *unavailableError
		switch {
		case errors.As(err, &down): // only the fleet's server is reached before the venue
			f, _ := a.fleet()
			name := map[bool]string{false: "redis", true: "postgres"}[f.postgres]
			server := map[bool]string{false: "Redis", true: "PostgreSQL"}[f.postgres]
			d.fail(name, err.Error(), "start the fleet's "+server+", or point --"+f.flag+" (env "+f.env+") at the one it runs on; the rate budget and the intent store live there")
		case a.inFleet():
			f, _ := a.fleet()
			d.fail("client", err.Error(), "check --base-url, --rate-per-minute, --burst and --"+f.flag+" (env "+f.env+")")
		default:
			d.fail("client", err.Error(), "check --base-url, --rate-per-minute and --burst")
		}
		return err
	}
	tc := c.Transport()
	last := func() (transport.Attempt, bool) {
		mu.Lock()
		defer mu.Unlock()
		if len(attempts) == 0 {
			return transport.Attempt{}, false
		}
		return attempts[len(attempts)-1], true
	}

	acct, accErr := c.Account(ctx)
	at, answered := last()
	switch {
	case !answered || at.Status == 0:
		reason := "no answer"
		if at.Err != nil {
			reason = at.Err.Error()
		} else if accErr != nil {
			reason = accErr.Error()
		}
		d.fail("connection", reason, "check the network, the base URL and any firewall; the venue must be reachable over https")
		return nil
	default:
		d.ok("connection", fmt.Sprintf("%s, answered %d", at.Proto, at.Status))
	}
	if !strings.HasPrefix(at.Proto, "HTTP/2") {
		d.warn("protocol", at.Proto+" (the venue serves HTTP/2)", "a proxy or middlebox may be downgrading the connection; writes are still sent at most once")
	}
	rtt := at.Elapsed.Round(100 * time.Microsecond).String()
	if at.Elapsed > doctorRTTWarn {
		d.warn("round trip", rtt, "a slow link leaves less of each signature's 30 s validity")
	} else {
		d.ok("round trip", rtt)
	}

	a.doctorClock(d, tc)

	switch {
	case errors.Is(accErr, transport.ErrCredentials):
		d.fail("account", accErr.Error(), "the venue refused the API key or signature: check that the key pair matches the API key registered with the venue, and the clock line above")
		return nil
	case accErr != nil:
		d.fail("account", accErr.Error(), "see the error; rerun with --log-level debug for every attempt")
		return nil
	}
	detail := fmt.Sprintf("%s, %s, buying power %s %s", acct.AccountNumber, acct.Status, acct.BuyingPower, acct.BuyingPowerCurrency)
	switch {
	case !acct.IsAPITradable:
		d.fail("account", detail+", not API-tradable", "enable API trading for this account with the venue")
	case acct.Status != "active":
		d.warn("account", detail, "an account that is not active may refuse orders")
	default:
		d.ok("account", detail)
	}
	if f, _ := a.fleet(); f.postgres {
		a.doctorPostgres(ctx, d, f, acct.AccountNumber)
	}

	n := 0
	var ordErr error
	for _, err := range c.Orders(ctx, broker.OrderFilter{}, broker.Paging{MaxPages: 1}) {
		var capped *broker.PageCapError
		if errors.As(err, &capped) {
			break // more pages exist; one is what doctor reads
		}
		if err != nil {
			ordErr = err
			break
		}
		n++
	}
	if ordErr != nil {
		d.fail("orders", ordErr.Error(), "see the error; rerun with --log-level debug for every attempt")
		return nil
	}
	d.ok("orders", fmt.Sprintf("first page read: %d order(s)", n))
	return nil
}

// doctorClock reports the offset the transport measured from the venue's
// Date headers.
func (a *app) doctorClock(d *doctorReport, tc *transport.Client) {
	off, ok := tc.ClockOffset()
	if !ok {
		d.warn("clock", "the venue sent no usable Date header; offset unknown", "placement then waits the longest margin before it treats a create as expired")
		return
	}
	abs := off.Abs()
	ahead := "behind"
	if off > 0 {
		ahead = "ahead of"
	}
	detail := fmt.Sprintf("the venue's clock is %s %s this machine's", abs.Round(time.Millisecond), ahead)
	if abs < 500*time.Millisecond {
		detail = fmt.Sprintf("within %s of the venue's (Date headers have 1 s resolution)", abs.Round(time.Millisecond))
	}
	switch {
	case abs >= doctorClockFail:
		d.fail("clock", detail, "sync this machine's clock (NTP: timedatectl set-ntp true, or chronyd); tradewire corrects for the offset, but signatures stamped far off can be refused (401)")
	case abs >= doctorClockWarn:
		d.warn("clock", detail, "sync this machine's clock (NTP); tradewire signs with the corrected time meanwhile")
	default:
		d.ok("clock", detail)
	}
}
