package venue

import (
	"crypto/ed25519"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/shopspring/decimal"
)

// withAccount is setup with the demo account changed by mod.
func withAccount(t *testing.T, cfg engineConfig, mod func(*accountConfig)) *harness {
	t.Helper()
	a := accountConfig{Number: demoAccountNumber, APIKey: demoAPIKey,
		PublicKey: demoPrivateKey().Public().(ed25519.PublicKey),
		Holdings:  demoHoldings(), ThirtyDayVolume: decimal.RequireFromString(demoThirtyDayVolume)}
	mod(&a)
	cfg.Accounts = []accountConfig{a}
	return setup(t, cfg)
}

// estimate reads one estimated price row's price for side ("bid"/"ask").
func (h *harness) estimate(symbol, side, qty string) (price, feeRatio decimal.Decimal, ts string) {
	h.t.Helper()
	resp, b := h.do("GET", pathEstimated+"?symbol="+symbol+"&side="+side+"&quantity="+qty, nil)
	mustStatus(h.t, resp, b, 200)
	row := decode(h.t, b)["results"].([]any)[0].(map[string]any)
	return dec(h.t, row[side]), dec(h.t, row["fee_ratio"]), row["timestamp"].(string)
}

// account reads the account row.
func (h *harness) account() map[string]any {
	h.t.Helper()
	resp, b := h.do("GET", pathAccounts, nil)
	mustStatus(h.t, resp, b, 200)
	return decode(h.t, b)["results"].([]any)[0].(map[string]any)
}

func TestDepthSlippage(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{Seed: 5})
	for _, tc := range []struct{ symbol, small, big string }{
		{"BTC-USD", "0.001", "20"}, {"ETH-USD", "0.25", "400"}, {"DOGE-USD", "10000", "2000000"},
		{"SOL-USD", "20", "10000"}, {"ARB-USD", "1", "500000"},
	} {
		bid, ask, _ := h.v.quote(tc.symbol)
		// Small orders keep the top of the book: the negative control.
		if a, _, _ := h.estimate(tc.symbol, "ask", tc.small); !a.Equal(ask) {
			t.Errorf("%s ask for %s = %s, want the best ask %s", tc.symbol, tc.small, a, ask)
		}
		if b, _, _ := h.estimate(tc.symbol, "bid", tc.small); !b.Equal(bid) {
			t.Errorf("%s bid for %s = %s, want the best bid %s", tc.symbol, tc.small, b, bid)
		}
		// Bigger orders walk the book: the average gets worse, never better.
		prevAsk, prevBid := ask, bid
		big := decimal.RequireFromString(tc.big)
		for _, f := range []string{"0.01", "0.1", "0.5", "1"} {
			q := floorTo(big.Mul(decimal.RequireFromString(f)), h.v.bySymbol[tc.symbol].assetInc)
			a, _, _ := h.estimate(tc.symbol, "ask", q.String())
			b, _, _ := h.estimate(tc.symbol, "bid", q.String())
			if a.LessThan(prevAsk) || b.GreaterThan(prevBid) {
				t.Errorf("%s %s: ask %s bid %s improve on the smaller size's %s %s", tc.symbol, q, a, b, prevAsk, prevBid)
			}
			prevAsk, prevBid = a, b
		}
		t.Logf("%s: best ask %s, ask for %s %s (%s bp); best bid %s, bid for %s %s", tc.symbol, ask, tc.big, prevAsk,
			prevAsk.Sub(ask).Div(ask).Mul(decimal.NewFromInt(10000)).StringFixed(2), bid, tc.big, prevBid)
		if !prevAsk.GreaterThan(ask) || !prevBid.LessThan(bid) {
			t.Errorf("%s %s: ask %s bid %s show no slippage from %s %s", tc.symbol, tc.big, prevAsk, prevBid, ask, bid)
		}
	}
}

func TestMarketFillWalksTheBook(t *testing.T) {
	t.Parallel()
	h := withAccount(t, engineConfig{Seed: 5}, func(a *accountConfig) { a.BuyingPower = decimal.NewFromInt(1_000_000) })
	const qty = "6" // BTC: beyond the top level, within buying power
	_, ask, _ := h.v.quote("BTC-USD")
	est, ratio, _ := h.estimate("BTC-USD", "ask", qty)
	if !est.GreaterThan(ask) {
		t.Fatalf("estimate %s for %s BTC is not above the best ask %s", est, qty, ask)
	}
	o := h.create(orderBody("a1111111-2222-4333-8444-555555555555", "buy", "market", "BTC-USD", `{"asset_quantity":"`+qty+`"}`), 201)
	if o["state"] != "filled" {
		t.Fatalf("state %v", o["state"])
	}
	q := decimal.RequireFromString(qty)
	avg := dec(t, o["average_price"])
	if !avg.Equal(est) {
		t.Errorf("filled at %s, the estimate of the same second was %s", avg, est)
	}
	if fee := dec(t, o["fee_charged"]); !fee.Equal(avg.Mul(q).Mul(ratio)) {
		t.Errorf("fee %s, want %s", fee, avg.Mul(q).Mul(ratio))
	}
	ex := o["executions"].([]any)
	if len(ex) != 1 || !dec(t, ex[0].(map[string]any)["effective_price"]).Equal(avg) {
		t.Errorf("executions %v", ex)
	}
}

func TestFillWithinALimit(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{Seed: 5})
	p := h.v.bySymbol["ETH-USD"]
	now := h.clock.Now()
	_, ask := p.quoteAt(h.v.seed, now)
	huge := decimal.RequireFromString("400")
	// At the best ask only the top level fills.
	got, price := h.v.fillWithin(p, "buy", huge, ask, now)
	if !got.IsPositive() || !got.LessThan(huge) || !price.Equal(ask) {
		t.Errorf("within %s: %s at %s, want part of %s at the ask", ask, got, price, huge)
	}
	// A looser limit reaches deeper levels, never beyond the limit.
	loose := ask.Mul(decimal.RequireFromString("1.002")).Round(2)
	got2, price2 := h.v.fillWithin(p, "buy", huge, loose, now)
	if !got2.GreaterThan(got) || price2.GreaterThan(loose) || !price2.GreaterThan(ask) {
		t.Errorf("within %s: %s at %s", loose, got2, price2)
	}
	// Below the ask nothing fills.
	if got, _ := h.v.fillWithin(p, "buy", huge, ask.Sub(p.quoteInc), now); !got.IsZero() {
		t.Errorf("below the ask: %s filled", got)
	}
	// Without a limit the whole size fills at the fill price.
	if got, notional := p.sweep(h.v.seed, now, "buy", huge, decimal.Zero); !got.Equal(huge) ||
		!averagePrice(p, "buy", got, notional).Equal(h.v.fillPrice(p, "buy", huge, now)) {
		t.Errorf("sweep %s of %s", got, huge)
	}
}

func TestCrossedAndStaleBooks(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{Seed: 9})
	p := h.v.bySymbol["BTC-USD"]
	var crossedAt, staleAt time.Time
	crossed, stale := 0, 0
	for s := 0; s < 86400; s++ {
		ts := epoch.Add(time.Duration(s) * time.Second)
		bid, ask := p.quoteAt(h.v.seed, ts)
		if bid.GreaterThan(ask) {
			crossed++
			if crossedAt.IsZero() && s > 60 {
				crossedAt = ts
			}
		}
		if !p.bookTime(h.v.seed, ts).Equal(ts) {
			stale++
			if staleAt.IsZero() && s > 60 {
				staleAt = ts
			}
		}
	}
	// Rare but present: about 1 in 900 seconds crossed, a few stale
	// stretches an hour.
	t.Logf("BTC-USD, seed 9, one day: %d crossed seconds, %d stale seconds", crossed, stale)
	if crossed < 40 || crossed > 250 {
		t.Errorf("%d crossed seconds in a day", crossed)
	}
	if stale < 48*staleMin/2 || stale > 48*staleMax {
		t.Errorf("%d stale seconds in a day", stale)
	}

	// The venue sends a crossed book as it is, and fills against it.
	h.clock.Advance(crossedAt.Sub(h.clock.Now()))
	resp, b := h.do("GET", pathBBA+"?symbol=BTC-USD", nil)
	mustStatus(t, resp, b, 200)
	row := decode(t, b)["results"].([]any)[0].(map[string]any)
	bid, ask := dec(t, row["bid"]), dec(t, row["ask"])
	if !bid.GreaterThan(ask) {
		t.Fatalf("at %s: bid %s ask %s, want crossed", crossedAt, bid, ask)
	}
	buy := h.create(orderBody("b1111111-2222-4333-8444-555555555555", "buy", "market", "BTC-USD", `{"asset_quantity":"0.01"}`), 201)
	sell := h.create(orderBody("b2111111-2222-4333-8444-555555555555", "sell", "market", "BTC-USD", `{"asset_quantity":"0.01"}`), 201)
	if buy["state"] != "filled" || !dec(t, buy["average_price"]).Equal(ask) ||
		sell["state"] != "filled" || !dec(t, sell["average_price"]).Equal(bid) {
		t.Errorf("at a crossed book: buy %v at %v, sell %v at %v; book %s/%s", buy["state"], buy["average_price"], sell["state"], sell["average_price"], bid, ask)
	}
	a := h.account()
	if bp := dec(t, a["buying_power"]); !bp.IsPositive() {
		t.Errorf("buying power %s", bp)
	}

	// A stale book keeps the time and prices of the second it froze at.
	h.clock.Advance(staleAt.Sub(h.clock.Now()))
	frozen := p.bookTime(h.v.seed, staleAt)
	resp, b = h.do("GET", pathBBA+"?symbol=BTC-USD", nil)
	mustStatus(t, resp, b, 200)
	row = decode(t, b)["results"].([]any)[0].(map[string]any)
	fb, fa := p.quoteAt(h.v.seed, frozen)
	if row["timestamp"] != marketStamp(frozen) || !frozen.Before(staleAt) || !dec(t, row["bid"]).Equal(fb) || !dec(t, row["ask"]).Equal(fa) {
		t.Errorf("at %s: %v, want the book of %s (%s/%s)", staleAt, row, frozen, fb, fa)
	}
	if _, _, ts := h.estimate("BTC-USD", "ask", "0.01"); ts != marketStamp(frozen) {
		t.Errorf("estimate timestamp %s, want %s", ts, marketStamp(frozen))
	}
}

// The four pairs existing tests and bots rely on, as they always were.
var corePairRows = map[string][4]string{
	"BTC-USD":  {"0.00000001", "0.01", "20.0000000000000000", "0.1"},
	"DOGE-USD": {"0.01", "0.000001", "2000000.0000000000000000", "0.1"},
	"ETH-USD":  {"0.000001", "0.01", "400.0000000000000000", "0.1"},
	"SOL-USD":  {"0.000001", "0.01", "10000.0000000000000000", "0.1"},
}

func TestCatalogue(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{})
	var rows []map[string]any
	pages := 0
	for target := pathPairs; target != ""; pages++ {
		resp, b := h.do("GET", target, nil)
		mustStatus(t, resp, b, 200)
		m := decode(t, b)
		for _, r := range m["results"].([]any) {
			rows = append(rows, r.(map[string]any))
		}
		target = ""
		if n, ok := m["next"].(string); ok {
			u, _ := url.Parse(n)
			target = u.RequestURI()
		}
	}
	if len(rows) < 40 || pages < 3 {
		t.Errorf("%d pairs over %d pages, want tens over several", len(rows), pages)
	}
	status := map[string]int{}
	noMin := 0
	for i, r := range rows {
		s := r["symbol"].(string)
		if i > 0 && s <= rows[i-1]["symbol"].(string) {
			t.Errorf("%s after %s: not in symbol order", s, rows[i-1]["symbol"])
		}
		status[r["status"].(string)]++
		if _, ok := r["min_order_amount"]; !ok {
			noMin++
		}
		if want, ok := corePairRows[s]; ok {
			got := [4]string{r["asset_increment"].(string), r["quote_increment"].(string), r["max_order_size"].(string), r["min_order_amount"].(string)}
			if got != want || r["status"] != "tradable" {
				t.Errorf("%s: %v %v, want %v tradable", s, got, r["status"], want)
			}
			delete(corePairRows, s)
		}
	}
	if len(corePairRows) > 0 {
		t.Errorf("missing %v", corePairRows)
	}
	if status["untradable"] == 0 || status["sellonly"] == 0 || status["tradable"] < 30 || len(status) != 3 || noMin == 0 {
		t.Errorf("statuses %v, %d without min_order_amount", status, noMin)
	}
}

// TestPairsFile holds pairs.txt valid (the venue would not start
// otherwise) and to what doc.go says of it, and parsePairs to refusing a
// catalogue that is not one, naming the line.
func TestPairsFile(t *testing.T) {
	t.Parallel()
	ps, err := parsePairs(pairsText)
	if err != nil {
		t.Fatal(err)
	}
	core := 0
	for _, p := range ps {
		if p.quote != "USD" {
			t.Errorf("%s: not a USD pair", p.symbol)
		}
		if p.core {
			core++
		}
	}
	if len(ps) != 42 || core != len(corePairs) {
		t.Errorf("%d pairs, %d of them core; doc.go says 42, with the %d core pairs", len(ps), core, len(corePairs))
	}
	const head = "# a comment\n\n" + pairsHeader + "\n"
	const good = "BTC-USD 0.00000001 0.01 20.0 0.1 65000 0.00004 150000 tradable\n"
	if ps, err := parsePairs(head + good + "ETH-USD 0.000001 0.01 400.0 - 3200 0.00006 100000 sellonly\n"); err != nil ||
		len(ps) != 2 || ps[1].minAmountStr != "" || !ps[1].minAmount.IsZero() || ps[1].status != pairSellOnly {
		t.Errorf("a good catalogue: %v, %v", ps, err)
	}
	for _, c := range []struct{ name, text, want string }{
		{"empty", head, "no pair"},
		{"no header", good, "line 1: "},
		{"a column short", head + "BTC-USD 0.00000001 0.01 20.0 0.1 65000 0.00004 150000\n", "line 4: 8 columns"},
		{"not a decimal", head + "BTC-USD 0.00000001 0.01x 20.0 0.1 65000 0.00004 150000 tradable\n", `line 4: "0.01x"`},
		{"a zero increment", head + "BTC-USD 0 0.01 20.0 0.1 65000 0.00004 150000 tradable\n", `line 4: "0" is not`},
		{"a negative spread", head + "BTC-USD 0.00000001 0.01 20.0 0.1 65000 -0.00004 150000 tradable\n", `line 4: "-0.00004"`},
		{"a bad symbol", head + "BTCUSD 0.00000001 0.01 20.0 0.1 65000 0.00004 150000 tradable\n", `line 4: symbol "BTCUSD"`},
		{"an unknown status", head + "BTC-USD 0.00000001 0.01 20.0 0.1 65000 0.00004 150000 open\n", `line 4: status "open"`},
		{"out of order", head + good + "AAVE-USD 0.000001 0.01 500.0 1.0 180 0.0003 8000 tradable\n", "line 5: AAVE-USD after BTC-USD"},
		{"a repeat", head + good + good, "line 5: BTC-USD after BTC-USD"},
	} {
		if _, err := parsePairs(c.text); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}

func TestPairStatusRefusesCreates(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{})
	for i, tc := range []struct {
		symbol, side string
		status       int
		detail       string
	}{
		{"BSV-USD", "buy", 400, "Trading pair is untradable: BSV-USD"},
		{"BSV-USD", "sell", 400, "Trading pair is untradable: BSV-USD"},
		{"XTZ-USD", "buy", 400, "Trading pair is sell only: XTZ-USD"},
		{"XTZ-USD", "sell", 201, ""}, // accepted (and failed: no XTZ held)
		{"ARB-USD", "buy", 201, ""},  // no min_order_amount: any size on the increment
	} {
		cid := fmt.Sprintf("c%07d-2222-4333-8444-555555555555", i)
		resp, b := h.do("POST", ordersTarget, orderBody(cid, tc.side, "market", tc.symbol, `{"asset_quantity":"1"}`))
		mustStatus(t, resp, b, tc.status)
		if tc.status == 400 {
			want := `{"type":"validation_error","errors":[{"detail":"` + tc.detail + `","attr":"symbol"}]}`
			if string(b) != want {
				t.Errorf("%s %s: %s, want %s", tc.side, tc.symbol, b, want)
			}
		}
	}
	// Prices are quoted for every listed pair, whatever its status.
	resp, b := h.do("GET", pathBBA+"?symbol=BSV-USD&symbol=XTZ-USD", nil)
	mustStatus(t, resp, b, 200)
}

func TestFeeTiersStepWithVolume(t *testing.T) {
	t.Parallel()
	h := withAccount(t, engineConfig{}, func(a *accountConfig) { a.ThirtyDayVolume = decimal.RequireFromString("49000") })
	tier := func(ratio, vol, next, threshold string) {
		t.Helper()
		a := h.account()
		ft := a["fee_tier_status"].(map[string]any)
		got := []string{dec(t, ft["fee_ratio"]).String(), dec(t, ft["thirty_day_volume"]).StringFixed(2), "null", "null"}
		if ft["next_fee_tier_ratio"] != nil {
			got[2], got[3] = dec(t, ft["next_fee_tier_ratio"]).String(), dec(t, ft["next_fee_tier_threshold"]).String()
		}
		if want := []string{ratio, vol, next, threshold}; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("fee tier %v, want %v", got, want)
		}
	}
	tier("0.0095", "49000.00", "0.0085", "50000")
	// A fill that crosses the threshold pays the tier it started in.
	first := h.create(orderBody("d1111111-2222-4333-8444-555555555555", "buy", "market", "ETH-USD", `{"asset_quantity":"0.5"}`), 201)
	n1 := dec(t, first["average_price"]).Mul(decimal.RequireFromString("0.5"))
	if fee := dec(t, first["fee_charged"]); !fee.Equal(n1.Mul(decimal.RequireFromString("0.0095"))) {
		t.Errorf("first fee %s on %s", fee, n1)
	}
	vol := decimal.RequireFromString("49000").Add(n1)
	if vol.LessThan(decimal.RequireFromString("50000")) {
		t.Fatalf("volume %s did not cross 50000", vol)
	}
	tier("0.0085", vol.Round(2).StringFixed(2), "0.006", "250000")
	// The next fill, and the estimate, charge the new tier.
	if _, ratio, _ := h.estimate("ETH-USD", "ask", "0.5"); !ratio.Equal(decimal.RequireFromString("0.0085")) {
		t.Errorf("estimate fee_ratio %s", ratio)
	}
	second := h.create(orderBody("d2111111-2222-4333-8444-555555555555", "sell", "market", "ETH-USD", `{"asset_quantity":"0.5"}`), 201)
	n2 := dec(t, second["average_price"]).Mul(decimal.RequireFromString("0.5"))
	if fee := dec(t, second["fee_charged"]); !fee.Equal(n2.Mul(decimal.RequireFromString("0.0085"))) {
		t.Errorf("second fee %s on %s", fee, n2)
	}
	// Thirty-one days on, neither the starting volume nor the fills count.
	h.clock.Advance(31 * 24 * time.Hour)
	tier("0.0095", "0.00", "0.0085", "50000")

	top := withAccount(t, engineConfig{}, func(a *accountConfig) { a.ThirtyDayVolume = decimal.RequireFromString("2000000") })
	ft := top.account()["fee_tier_status"].(map[string]any)
	if !dec(t, ft["fee_ratio"]).Equal(decimal.RequireFromString("0.004")) || ft["next_fee_tier_ratio"] != nil || ft["next_fee_tier_threshold"] != nil {
		t.Errorf("top tier %v", ft)
	}
}

func TestTierAt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ vol, ratio string }{
		{"0", "0.0095"}, {"49999.99", "0.0095"}, {"50000", "0.0085"}, {"249999.99", "0.0085"},
		{"250000", "0.006"}, {"999999.99", "0.006"}, {"1000000", "0.004"}, {"1e12", "0.004"},
	} {
		if got := feeTiers[tierAt(decimal.RequireFromString(tc.vol))].ratio; got.String() != tc.ratio {
			t.Errorf("volume %s: ratio %s, want %s", tc.vol, got, tc.ratio)
		}
	}
}

func TestAccountStatesAndReadOnlyKey(t *testing.T) {
	t.Parallel()
	const (
		denied      = `{"type":"client_error","errors":[{"detail":"You do not have permission to perform this action.","attr":null}]}`
		deactivated = `{"type":"client_error","errors":[{"detail":"Account is deactivated.","attr":null}]}`
		sellOnly    = `{"type":"validation_error","errors":[{"detail":"Account is sell only.","attr":"side"}]}`
	)
	for _, tc := range []struct {
		name, status string
		readOnly     bool
		buy, sell    int
		buyBody      string
		cancel       int // of an unknown id: 404 when cancels are allowed
	}{
		{"active", "active", false, 201, 201, "", 404},
		{"sell_only", "sell_only", false, 400, 201, sellOnly, 404},
		{"deactivated", "deactivated", false, 403, 403, deactivated, 404},
		{"read-only key", "active", true, 403, 403, denied, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := withAccount(t, engineConfig{}, func(a *accountConfig) { a.Status, a.ReadOnly = tc.status, tc.readOnly })
			if got := h.account()["status"]; got != tc.status {
				t.Errorf("status %v", got)
			}
			resp, b := h.do("POST", ordersTarget, orderBody("e1111111-2222-4333-8444-555555555555", "buy", "market", "ETH-USD", `{"asset_quantity":"0.01"}`))
			mustStatus(t, resp, b, tc.buy)
			if tc.buyBody != "" && string(b) != tc.buyBody {
				t.Errorf("buy: %s, want %s", b, tc.buyBody)
			}
			resp, b = h.do("POST", ordersTarget, orderBody("e2111111-2222-4333-8444-555555555555", "sell", "market", "ETH-USD", `{"asset_quantity":"0.01"}`))
			mustStatus(t, resp, b, tc.sell)
			resp, b = h.do("POST", pathOrders+"6a8738ba-836d-4afd-abd8-483d7e4d01c9/cancel/", nil)
			mustStatus(t, resp, b, tc.cancel)
			if tc.cancel == 403 && string(b) != denied {
				t.Errorf("cancel: %s", b)
			}
			// Reads work whatever the state.
			for _, target := range []string{pathAccounts, ordersTarget, pathHoldings + "?account_number=" + demoAccountNumber, pathBBA} {
				resp, b := h.do("GET", target, nil)
				mustStatus(t, resp, b, 200)
			}
			if tc.buy/100 != 2 && tc.sell/100 != 2 && h.v.ledger.Counts().Creates != 0 {
				t.Error("a refused create was recorded")
			}
		})
	}
	// A deactivated account can still cancel what it has open.
	h := withAccount(t, engineConfig{}, func(a *accountConfig) {})
	o := h.create(orderBody("e3111111-2222-4333-8444-555555555555", "buy", "limit", "DOGE-USD", `{"asset_quantity":"10","limit_price":"0.01"}`), 201)
	h.v.byNumber[demoAccountNumber].Status = accountDeactivated
	resp, b := h.do("POST", pathOrders+o["id"].(string)+"/cancel/", nil)
	mustStatus(t, resp, b, 200)
}

func TestConfigAccount(t *testing.T) {
	t.Parallel()
	for _, bad := range []Config{
		{AccountStatus: "frozen"},
		{ThirtyDayVolume: decimal.NewNullDecimal(decimal.NewFromInt(-1))},
		{Holdings: map[string]decimal.Decimal{"BTC": decimal.NewFromInt(-1)}},
	} {
		if _, err := New(bad); err == nil {
			t.Errorf("New accepted %+v", bad)
		}
	}
	clk := clockwork.NewFakeClockAt(epoch)
	v, err := New(Config{Clock: clk, AccountStatus: "sell_only", ReadOnly: true,
		ThirtyDayVolume: decimal.NewNullDecimal(decimal.RequireFromString("300000")),
		Holdings:        map[string]decimal.Decimal{"ZEC": decimal.NewFromInt(3)}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := v.Config()
	h := &harness{t: t, v: v.e, clock: clk, key: cfg.APIKey, priv: cfg.PrivateKey}
	a := h.account()
	if a["status"] != "sell_only" || !dec(t, a["fee_tier_status"].(map[string]any)["fee_ratio"]).Equal(decimal.RequireFromString("0.006")) {
		t.Errorf("account %v", a)
	}
	resp, b := h.do("GET", pathHoldings+"?account_number="+demoAccountNumber, nil)
	mustStatus(t, resp, b, 200)
	if hs := decode(t, b)["results"].([]any); len(hs) != 1 || hs[0].(map[string]any)["asset_code"] != "ZEC" {
		t.Errorf("holdings %s", b)
	}
	resp, b = h.do("POST", ordersTarget, orderBody("f1111111-2222-4333-8444-555555555555", "sell", "market", "ZEC-USD", `{"asset_quantity":"1"}`))
	mustStatus(t, resp, b, 403)
}

var (
	orderStampRe  = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}-0[45]:00$`)
	marketStampRe = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$`)
)

func TestTimestampForms(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{})
	o := h.create(orderBody("a7111111-2222-4333-8444-555555555555", "buy", "market", "ETH-USD", `{"asset_quantity":"0.01"}`), 201)
	ex := o["executions"].([]any)[0].(map[string]any)
	for _, s := range []any{o["created_at"], o["updated_at"], ex["timestamp"]} {
		if !orderStampRe.MatchString(s.(string)) || !strings.HasSuffix(s.(string), "-04:00") {
			t.Errorf("order timestamp %v, want the capture's form (microseconds, -04:00 in August)", s)
		}
		if at, err := time.Parse(time.RFC3339Nano, s.(string)); err != nil || !at.Equal(h.clock.Now()) {
			t.Errorf("order timestamp %v is not the venue's now %s", s, h.clock.Now())
		}
	}
	_, b := h.do("GET", pathBBA+"?symbol=ETH-USD", nil)
	bts := decode(t, b)["results"].([]any)[0].(map[string]any)["timestamp"].(string)
	_, _, ets := h.estimate("ETH-USD", "bid", "0.01")
	for _, s := range []string{bts, ets} {
		if !marketStampRe.MatchString(s) {
			t.Errorf("market data timestamp %s, want the capture's form (nanoseconds, Z)", s)
		}
	}
	if got := orderStamp(time.Date(2026, 1, 15, 17, 0, 0, 0, time.UTC)); got != "2026-01-15T12:00:00.000000-05:00" {
		t.Errorf("January: %s", got)
	}
}

// TestEasternMatchesTZDatabase checks the hand-written US Eastern rule
// against the system's time zone database, where there is one.
func TestEasternMatchesTZDatabase(t *testing.T) {
	t.Parallel()
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	check := func(at time.Time) {
		_, want := at.In(ny).Zone()
		if _, got := at.In(eastern(at)).Zone(); got != want {
			t.Fatalf("%s: offset %d, want %d", at, got, want)
		}
	}
	for at := time.Date(2008, 1, 1, 0, 0, 0, 0, time.UTC); at.Year() < 2036; at = at.Add(5 * time.Hour) {
		check(at)
	}
	for y := 2008; y < 2036; y++ {
		for _, edge := range []time.Time{nthSunday(y, time.March, 2).Add(7 * time.Hour), nthSunday(y, time.November, 1).Add(6 * time.Hour)} {
			check(edge.Add(-time.Second))
			check(edge)
		}
	}
}
