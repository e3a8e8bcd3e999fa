// Command feejob prints the fees an account paid over the last 30 days,
// in total and per symbol, as a batch job would. It runs on the simulated
// venue in memory (package brokertest), whose account has a seeded history
// of orders: no credentials, no network. Against the real venue, build the
// client with broker.Config{Getenv: os.Getenv} and leave out Transport.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "feejob:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	srv, err := brokertest.New(venue.Config{History: 40}) // in memory, 40 orders in 30 days
	if err != nil {
		return err
	}
	defer srv.Close()
	env := map[string]string{"TRADEWIRE_BASE_URL": srv.URL, "TRADEWIRE_API_KEY": srv.APIKey,
		"TRADEWIRE_PRIVATE_KEY": srv.PrivateKeyBase64}
	c, err := broker.New(broker.Config{
		Getenv:    func(k string) string { return env[k] },                // os.Getenv for real
		Transport: transport.Config{RoundTripper: srv.Client().Transport}, // the in-memory venue; leave out for the real one
	})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()

	r, err := c.FeeSummary(ctx, 30*24*time.Hour, broker.Paging{MaxPages: 100, AllowPartial: true,
		OnProgress: func(p broker.Progress) { log.Printf("%d pages, %d orders", p.Pages, p.Items) }})
	if err != nil {
		return err // a *broker.PageCapError without AllowPartial; ErrRateLimited, ErrUnavailable, …
	}
	if r.Partial {
		fmt.Fprintln(out, "PARTIAL: stopped at the page cap; the totals are too low")
	}
	fmt.Fprintln(out, "fees:", r.TotalFees, "orders:", r.Orders, "filled:", r.FilledNotional,
		"rate:", r.EffectiveFeeRate)
	for _, s := range r.BySymbol {
		fmt.Fprintln(out, s.Symbol, s.Orders, s.TotalFees)
	}
	return nil
}
