package brokertest_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// Example signs a request by hand with crypto/ed25519 and reads the
// accounts list from an in-memory venue.
func Example() {
	clk := clockwork.NewFakeClockAt(time.Date(2026, 8, 20, 12, 0, 0, 0, time.UTC))
	srv, err := brokertest.New(venue.Config{Clock: clk})
	if err != nil {
		panic(err)
	}
	client := &http.Client{Transport: srv.Client().Transport}

	seed, _ := base64.StdEncoding.DecodeString(srv.PrivateKeyBase64)
	key := ed25519.NewKeyFromSeed(seed)
	const target = "/api/v2/crypto/trading/accounts/"
	ts := strconv.FormatInt(clk.Now().Unix(), 10)
	// Signed message: api_key + timestamp + request-target + METHOD + body.
	sig := ed25519.Sign(key, []byte(srv.APIKey+ts+target+"GET"))

	req, _ := http.NewRequest("GET", srv.URL+target, nil)
	req.Header.Set("x-api-key", srv.APIKey)
	req.Header.Set("x-timestamp", ts)
	req.Header.Set("x-signature", base64.StdEncoding.EncodeToString(sig))
	resp, err := client.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()

	var page struct {
		Results []struct {
			AccountNumber string `json:"account_number"`
			BuyingPower   string `json:"buying_power"`
			FeeTierStatus struct {
				FeeRatio json.Number `json:"fee_ratio"`
			} `json:"fee_tier_status"`
		} `json:"results"`
	}
	json.NewDecoder(resp.Body).Decode(&page)
	a := page.Results[0]
	fmt.Println(resp.StatusCode, a.AccountNumber, a.BuyingPower, a.FeeTierStatus.FeeRatio)
	fmt.Println("signed requests:", srv.Ledger().Counts().Total)
	// Output:
	// 200 TW0000000001 100000.00 0.0095
	// signed requests: 1
}

// ExampleNewClock drives a bot's reads and waits on a shared Clock with
// the usual clockwork idiom: the minute it waits costs no wall time.
func ExampleNewClock() {
	start := time.Date(2026, 8, 20, 12, 0, 0, 0, time.UTC)
	clk := venue.NewClock(start)
	srv, err := brokertest.New(venue.Config{Clock: clk})
	if err != nil {
		panic(err)
	}
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		panic(err)
	}
	client, err := broker.New(broker.Config{
		APIKey:     srv.APIKey,
		PrivateKey: key,
		BaseURL:    srv.URL,
		Transport:  transport.Config{RoundTripper: srv.Client().Transport, Clock: clk},
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := venue.WithTimeout(context.Background(), clk, time.Hour)
	defer cancel()
	go func() {
		for clk.BlockUntilContext(ctx, 1) == nil {
			clk.Advance(time.Second)
		}
	}()

	acct, err := client.Account(ctx)
	if err != nil {
		panic(err)
	}
	quotes := 0
	for range 3 {
		if _, err := client.BestBidAsk(ctx, "BTC-USD"); err != nil {
			panic(err)
		}
		quotes++
		<-clk.After(30 * time.Second)
	}
	fmt.Println(acct.AccountNumber, quotes, "quotes over", clk.Since(start))
	// Output:
	// TW0000000001 3 quotes over 1m30s
}

// Example_faultPlan sets up a venue that loses the answer to the next
// create and would create a second order for a resent client_order_id,
// then changes what it does wrong while it runs.
func Example_faultPlan() {
	plan, err := venue.ParseFaultPlan([]byte(`{
		"faults": [{"kind": "lose_response", "method": "POST", "path": "/api/v2/crypto/trading/orders/", "status": 503}],
		"duplicate": "create_second"
	}`))
	if err != nil {
		panic(err)
	}
	srv, err := brokertest.New(venue.Config{Faults: plan})
	if err != nil {
		panic(err)
	}
	fmt.Println("pending:", srv.PendingFaults())

	// Two more lost answers, queued after the first; a resent
	// client_order_id now returns the original order.
	err = srv.SetFaultPlan(venue.FaultPlan{
		Faults:    []venue.Fault{{Kind: "lose_response", Method: "POST", Times: 2}},
		Duplicate: venue.ReturnOriginal,
	})
	fmt.Println("pending:", srv.PendingFaults(), err)

	// A plan with an invalid part changes nothing.
	err = srv.SetFaultPlan(venue.FaultPlan{
		Faults: []venue.Fault{{Kind: "respond", Status: 503}},
		Mix:    &venue.Mix{Rate5xx: 2},
	})
	fmt.Println("pending:", srv.PendingFaults(), err)
	// Output:
	// pending: 1
	// pending: 3 <nil>
	// pending: 3 venue: mix rate 2 is outside [0, 1]
}

// Example_account sets up a sell-only account whose 30-day volume puts
// it in the second fee tier; the accounts read reports both, with the
// next tier. (Its buys would answer 400 "Account is sell only.".)
func Example_account() {
	clk := venue.NewClock(time.Date(2026, 8, 20, 12, 0, 0, 0, time.UTC))
	srv, err := brokertest.New(venue.Config{Clock: clk, AccountStatus: "sell_only", ThirtyDayVolume: decimal.NewNullDecimal(decimal.RequireFromString("60000"))})
	if err != nil {
		panic(err)
	}
	key, _ := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	c, err := broker.New(broker.Config{
		APIKey:     srv.APIKey,
		PrivateKey: key,
		BaseURL:    srv.URL,
		Transport:  transport.Config{RoundTripper: srv.Client().Transport, Clock: clk},
	})
	if err != nil {
		panic(err)
	}
	a, err := c.Account(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Println(a.Status, a.FeeTier.FeeRatio, a.FeeTier.NextFeeTierRatio.Decimal, a.FeeTier.NextFeeTierThreshold.Decimal)
	// Output:
	// sell_only 0.0085 0.006 250000
}
