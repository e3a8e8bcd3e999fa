package cli

import (
	"github.com/jonboulle/clockwork"
	"github.com/spf13/cobra"

	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
)

// flagSim runs any command against an in-process simulated venue.
const flagSim = "sim"

// Settings of the venue --sim builds: a fixed seed, so that ids and
// prices are the same from run to run, and a history of orders over the
// past 30 days (filled, partly filled then canceled, canceled, failed,
// open), so that reads show something on a fresh machine.
const (
	simSeed    = 1
	simHistory = 40
)

// addSimFlag registers --sim on root.
func (a *app) addSimFlag(root *cobra.Command) {
	root.PersistentFlags().BoolVar(&a.flags.sim, flagSim, false,
		"run against an in-process simulated venue (demo credentials, seeded order history, no network); "+
			envBaseURL+", "+envAPIKey+", "+envPrivateKey+" and "+envPrivateKeyFile+" are then ignored")
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
	clk := a.opts.Clock
	if clk == nil {
		clk = clockwork.NewRealClock()
	}
	srv, err := brokertest.New(brokertest.WithClock(clk), brokertest.WithSeed(simSeed), brokertest.WithHistory(simHistory))
	if err != nil {
		return nil, usagef("--%s: %v", flagSim, err)
	}
	signer, err := demoSigner(srv)
	if err != nil {
		return nil, err
	}
	return &venueConfig{
		baseURL: srv.URL,
		signer:  signer,
		opts:    []transport.Option{transport.WithRoundTripper(srv.Transport())},
	}, nil
}

// demoSigner returns a signer for a simulated venue's demo credentials.
func demoSigner(srv *brokertest.Server) (*signing.Signer, error) {
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		return nil, keyError("the simulated venue's demo key", err)
	}
	signer, err := signing.New(srv.APIKey, key)
	if err != nil {
		return nil, usagef("the simulated venue's demo API key: %v", err)
	}
	return signer, nil
}
