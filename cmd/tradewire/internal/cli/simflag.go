package cli

import (
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/spf13/cobra"

	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// flagSim runs any command against an in-process simulated venue;
// flagSeed seeds it (and "sim serve", and the demo); flagSimTime sets the
// instant its simulated clock starts at.
const (
	flagSim     = "sim"
	flagSeed    = "seed"
	flagSimTime = "sim-time"
)

// Settings of the venue --sim builds: a seed (default 1), so that ids and
// prices are the same from run to run, and a history of orders over the
// 30 days before the simulated clock's start (filled, partly filled then
// canceled, canceled, failed, open), so that reads show something on a
// fresh machine.
const (
	simSeed    = 1
	simHistory = 40
)

// defaultSimTime is where the --sim clock starts unless --sim-time says
// otherwise: a fixed instant, so that a --sim run prints the same bytes
// every time for a given seed, whatever the wall clock says.
var defaultSimTime = time.Date(2026, time.March, 2, 14, 30, 0, 0, time.UTC)

// addSimFlag registers --sim, --seed and --sim-time on root.
func (a *app) addSimFlag(root *cobra.Command) {
	fs := root.PersistentFlags()
	fs.BoolVar(&a.flags.sim, flagSim, false,
		"run against an in-process simulated venue (demo credentials, seeded order history, no network, a simulated clock); "+
			envBaseURL+", "+envAPIKey+", "+envPrivateKey+" and "+envPrivateKeyFile+" are then ignored")
	fs.Int64Var(&a.flags.seed, flagSeed, simSeed, "seed of the simulated venue's prices, ids and history (with --sim, sim serve and demo): the same seed prints the same output")
	fs.StringVar(&a.flags.simTime, flagSimTime, defaultSimTime.Format(time.RFC3339),
		"with --sim, the RFC 3339 instant the simulated clock starts at; it moves only by what the command waits")
}

// checkSimFlags refuses --seed and --sim-time where they cannot apply:
// --seed without --sim (a real venue has no seed), --sim-time without
// --sim. Commands that run a simulated venue of their own (sim serve,
// demo) take --seed and pass seedOnly.
func (a *app) checkSimFlags(seedOnly bool) error {
	changed := func(name string) bool {
		f := a.root.PersistentFlags().Lookup(name)
		return f != nil && f.Changed
	}
	switch {
	case seedOnly && changed(flagSimTime):
		return usagef("--%s is for --%s: this command runs on the real clock", flagSimTime, flagSim)
	case seedOnly, a.flags.sim:
		return nil
	case changed(flagSeed), changed(flagSimTime):
		name := flagSeed
		if !changed(flagSeed) {
			name = flagSimTime
		}
		return usagef("--%s without --%s: only the simulated venue has one", name, flagSim)
	}
	return nil
}

// clock is the clock commands read "now" from and every client signs and
// waits with: Options.Clock when set; with --sim, the simulated clock
// (see simClock); otherwise the real clock.
func (a *app) clock() clockwork.Clock {
	if c := a.injectedClock(); c != nil {
		return c
	}
	return clockwork.NewRealClock()
}

// injectedClock is Options.Clock, or with --sim the simulated clock; nil
// for the real clock.
func (a *app) injectedClock() clockwork.Clock {
	switch {
	case a.opts.Clock != nil:
		return a.opts.Clock
	case a.flags.sim:
		return a.simClock()
	}
	return nil
}

// simClock is the --sim run's clock, made on first use: it starts at
// --sim-time and moves only when the command waits (by exactly the wait,
// at once), as the demo's does, so that two runs with the same seed print
// the same bytes. A bad --sim-time is found by checkSimFlags's callers
// through simStart before anything is sent.
func (a *app) simClock() clockwork.Clock {
	if a.simClk == nil {
		start, err := a.simStart()
		if err != nil {
			start = defaultSimTime
		}
		a.simClk = skippingClock(start)
	}
	return a.simClk
}

// skippingClock returns a simulated clock set to t that moves only when a
// wait is made, by exactly the wait, at once: the demo's and --sim's, for
// one client calling the venue a request at a time.
func skippingClock(t time.Time) venue.Clock {
	clk := venue.NewClock(t)
	clk.SkipWaits(1)
	return clk
}

// simStart parses --sim-time.
func (a *app) simStart() (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(a.flags.simTime))
	if err != nil {
		return time.Time{}, usagef("--%s %q: want an RFC 3339 time, such as %s", flagSimTime, a.flags.simTime, defaultSimTime.Format(time.RFC3339))
	}
	return t.UTC(), nil
}

// simVenue builds the in-process venue --sim runs a command against: its
// base URL, the demo signer, and its round tripper, so nothing leaves the
// process. The credentials in the environment are ignored; a credential or
// base-URL flag given together with --sim is refused, since the two ask for
// different venues.
func (a *app) simVenue() (*venueConfig, error) {
	for _, f := range []string{flagBaseURL, flagAPIKey, flagPrivateKeyFile} {
		if fl := a.root.PersistentFlags().Lookup(f); fl != nil && fl.Changed {
			return nil, usagef("--%s with --%s: the simulated venue has its own base URL and demo credentials", f, flagSim)
		}
	}
	if _, err := a.simStart(); err != nil {
		return nil, err
	}
	srv, err := brokertest.New(venue.Config{Clock: a.clock(), Seed: a.flags.seed, History: simHistory})
	if err != nil {
		return nil, usagef("--%s: %v", flagSim, err)
	}
	key, err := demoKey(srv)
	if err != nil {
		return nil, err
	}
	signer, err := signing.New(srv.APIKey, key)
	if err != nil {
		return nil, usagef("the simulated venue's demo API key: %v", err)
	}
	return &venueConfig{
		baseURL: srv.URL,
		apiKey:  srv.APIKey,
		key:     key,
		signer:  signer,
		opts:    transport.Config{RoundTripper: srv.Client().Transport},
	}, nil
}

// demoKey returns a simulated venue's demo private key.
func demoKey(srv *brokertest.Server) (*signing.PrivateKey, error) {
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		return nil, keyError("the simulated venue's demo key", err)
	}
	return key, nil
}
