package broker_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/idempotency/pgstore"
	"github.com/tradewire/tradewire/internal/pgtest"
	"github.com/tradewire/tradewire/internal/redistest"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// pgBuy is the order the PostgreSQL fleet tests place: a market buy the
// simulated venue fills.
var pgBuy = broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeMarket, AssetQuantity: decimal.RequireFromString("0.0001")}

// pgClient is one process's Client of srv on the fleet's PostgreSQL at
// url, with client_order_ids in namespace ns.
func pgClient(srv *brokertest.Server, url, ns string, perMinute float64, burst int) (*broker.Client, error) {
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		return nil, err
	}
	return broker.New(broker.Config{
		APIKey: srv.APIKey, PrivateKey: key, BaseURL: srv.URL, AccountNumber: srv.AccountNumber,
		PostgresURL: url,
		Transport:   transport.Config{RatePerMinute: perMinute, Burst: burst, RoundTripper: srv.Client().Transport},
		Orders:      orders.Config{Namespace: ns},
	})
}

// pgFleetResult is what one process of TestPostgresFleet placed in its
// timed window.
type pgFleetResult struct {
	Placed int
	Errors []string
}

// TestHelperProcess's PostgreSQL role: one bot process placing fresh keys
// as fast as the fleet's budget allows, for FLEET_SECONDS once released.
func pgFleetBot() (pgFleetResult, error) {
	var res pgFleetResult
	perMinute, _ := strconv.ParseFloat(os.Getenv("FLEET_PER_MINUTE"), 64)
	burst, _ := strconv.Atoi(os.Getenv("FLEET_BURST"))
	seconds, _ := strconv.Atoi(os.Getenv("FLEET_SECONDS"))
	srv := &brokertest.Server{URL: os.Getenv("VENUE_URL"), APIKey: os.Getenv("VENUE_API_KEY"),
		PrivateKeyBase64: os.Getenv("VENUE_KEY"), AccountNumber: os.Getenv("VENUE_ACCOUNT")}
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		return res, err
	}
	roots, err := pgCARoots(os.Getenv("VENUE_CA"))
	if err != nil {
		return res, err
	}
	c, err := broker.New(broker.Config{
		APIKey: srv.APIKey, PrivateKey: key, BaseURL: srv.URL, AccountNumber: srv.AccountNumber,
		PostgresURL: os.Getenv("POSTGRES_URL"),
		Transport:   transport.Config{RatePerMinute: perMinute, Burst: burst, RootCAs: roots},
		Orders:      orders.Config{Namespace: os.Getenv("FLEET_NS")},
	})
	if err != nil {
		return res, err
	}
	defer c.Close()
	ctx := context.Background()
	me := os.Getenv("FLEET_ME")
	// Warm up before the window: the pair's rules, the venue's clock and
	// the store's connection.
	if _, err := c.Place(ctx, me+"-warm", pgBuy); err != nil {
		return res, fmt.Errorf("warm-up Place: %w", err)
	}
	if err := redistest.AwaitRelease(); err != nil {
		return res, err
	}
	// The window stops new Places; a Place under way when it closes
	// finishes (cutting it off could abandon its create half sent).
	closes := time.Now().Add(time.Duration(seconds) * time.Second)
	// Two placers a process, as a bot with several strategies has: one
	// takes the next token while the other's Place is under way.
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(closes); i++ {
				_, err := c.Place(ctx, fmt.Sprintf("%s-%d-%d", me, g, i), pgBuy)
				mu.Lock()
				if err == nil {
					res.Placed++
				} else {
					res.Errors = append(res.Errors, err.Error())
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return res, nil
}

// TestPostgresFleet: four OS processes on one account share a store and a
// budget in PostgreSQL (a primary with a synchronous standby), placing
// over TLS + HTTP/2, then over loopback HTTP/1.1, on a venue that creates
// a second order for a reused client_order_id. The store vouches, so each Place is one request; the
// budget is shared, so together they place at ≥ 95 % of its rate with no
// 429. The rate is scaled up (1,200 a minute for 10 s) so the test takes
// seconds: set TRADEWIRE_PG_FLEET_MINUTE=1 to run the venue's own 100 a
// minute for a minute.
func TestPostgresFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("runs OS processes against PostgreSQL")
	}
	t.Parallel()
	for _, overTLS := range []bool{true, false} { // one after the other: each takes the machine's time
		t.Run(wireName(overTLS), func(t *testing.T) { testPostgresFleet(t, overTLS) })
	}
}

func testPostgresFleet(t *testing.T, overTLS bool) {
	url := pgtest.URL(t)
	perMinute, seconds := 1200, 10
	if os.Getenv("TRADEWIRE_PG_FLEET_MINUTE") != "" {
		perMinute, seconds = 100, 60
	}
	const procs, burst = 4, 1
	srv := venueServer(overTLS, venue.Config{AccountNumber: pgtest.Account(t), Seed: 21,
		Faults:     venue.FaultPlan{Duplicate: venue.CreateSecond},
		RateLimits: venue.RateLimits{Account: venue.RateLimit{PerMinute: float64(perMinute), Burst: 4 * procs}}})
	defer srv.Close()
	caFile := ""
	if overTLS {
		caFile = t.TempDir() + "/ca.pem"
		if err := os.WriteFile(caFile, srv.CACertPEM(), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ns := "pgfleet-" + strings.ToLower(pgtest.Account(t))
	env := []string{helperEnv + "=pgfleet", "VENUE_URL=" + srv.URL, "VENUE_API_KEY=" + srv.APIKey, "VENUE_KEY=" + srv.PrivateKeyBase64,
		"VENUE_ACCOUNT=" + srv.AccountNumber, "VENUE_CA=" + caFile, "POSTGRES_URL=" + url, "FLEET_NS=" + ns,
		"FLEET_PER_MINUTE=" + strconv.Itoa(perMinute), "FLEET_BURST=" + strconv.Itoa(burst), "FLEET_SECONDS=" + strconv.Itoa(seconds)}
	ps := make([]*redistest.Processes, procs)
	for i := range ps {
		ps[i] = redistest.StartProcesses(t, 1, append(env, "FLEET_ME=p"+strconv.Itoa(i))...)
	}
	from := len(srv.Ledger().Requests())
	for _, p := range ps {
		p.Go()
	}
	results := make([]pgFleetResult, procs)
	for i, p := range ps {
		p.Wait(t, func(int) any { return &results[i] })
	}
	placed := 0
	for _, r := range results {
		placed += r.Placed
		for _, e := range r.Errors {
			t.Errorf("a process: %s", e)
		}
	}
	// Counted at the venue: every request and order, and for the rate the
	// orders whose create arrived within the window, from the first (a
	// Place started in it may finish after it).
	reqs := srv.Ledger().Requests()[from:]
	var closes time.Time
	for _, r := range reqs {
		if r.Created != "" {
			closes = r.Time.Add(time.Duration(seconds) * time.Second)
			break
		}
	}
	throttled, orders, inWindow := 0, 0, 0
	var others []string // requests that created no order
	for _, r := range reqs {
		if r.Status == 429 {
			throttled++
		}
		if r.Created != "" {
			orders++
			if !r.Time.After(closes) {
				inWindow++
			}
		} else {
			others = append(others, fmt.Sprintf("%s %s: %d %s", r.Method, r.Target, r.Status, r.Fault))
		}
	}
	if orders != placed {
		t.Errorf("%d orders at the venue, %d Places answered", orders, placed)
	}
	perPlace := float64(len(reqs)) / float64(orders)
	perMin := float64(inWindow) / float64(seconds) * 60
	t.Logf("%d processes, one PostgreSQL store and budget (%d a minute, burst %d), %d s: %d orders in the window (%d in all), %d requests (%.3f an order), %.1f orders a minute (%.3f of the budget), %d × 429",
		procs, perMinute, burst, seconds, inWindow, orders, len(reqs), perPlace, perMin, perMin/float64(perMinute), throttled)
	if dups := srv.Ledger().DuplicateClientIDs(); len(dups) > 0 {
		t.Errorf("client_order_ids with two orders: %v", dups)
	}
	if throttled != 0 {
		t.Errorf("%d requests answered 429", throttled)
	}
	if perPlace > 1.0 {
		t.Errorf("%.3f requests an order; want 1.0 on a store that vouches; the others: %q", perPlace, others)
	}
	if perMin < 0.95*float64(perMinute) {
		t.Errorf("%.1f orders a minute; want ≥ 95 %% of the budget's %d", perMin, perMinute)
	}
}

// TestPostgresFailover kills the primary (SIGKILL) while four Clients,
// each with its own connections (four processes' worth), place the same
// keys over TLS + HTTP/2 on a venue that creates a second order for a
// reused client_order_id, and promotes the standby: no key gets two
// orders, no intent recorded before the kill is lost or goes back, and
// placing resumes within 10 s of the promotion with no operator action.
// With a synchronous standby the store vouches before the failover; with
// an asynchronous one it says it does not, and looks up first.
func TestPostgresFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a PostgreSQL server")
	}
	for _, tc := range []struct {
		name    string
		standby pgtest.Standby
		want    pgstore.Guarantee
	}{
		{"synchronous standby", pgtest.SyncStandby, pgstore.SynchronousStandby},
		{"asynchronous standby", pgtest.AsyncStandby, pgstore.AsynchronousStandby},
	} {
		for _, overTLS := range []bool{true, false} {
			t.Run(tc.name+", "+wireName(overTLS), func(t *testing.T) {
				t.Parallel()
				testFailover(t, tc.standby, tc.want, overTLS)
			})
		}
	}
}

// wireName names the venue's wire in a subtest's name.
func wireName(overTLS bool) string {
	return map[bool]string{false: "HTTP/1.1", true: "TLS + HTTP/2"}[overTLS]
}

// venueServer serves a venue over TLS + HTTP/2, or loopback HTTP/1.1.
func venueServer(overTLS bool, cfg venue.Config) *brokertest.Server {
	if overTLS {
		return brokertest.NewTLSServer(cfg)
	}
	return brokertest.NewServer(cfg)
}

func testFailover(t *testing.T, standby pgtest.Standby, want pgstore.Guarantee, overTLS bool) {
	cluster := pgtest.Start(t, standby)
	srv := venueServer(overTLS, venue.Config{AccountNumber: pgtest.Account(t), Seed: 5,
		Faults:     venue.FaultPlan{Duplicate: venue.CreateSecond},
		RateLimits: venue.RateLimits{Account: venue.RateLimit{PerMinute: 100000, Burst: 1000}}})
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := "failover-" + strings.ToLower(pgtest.Account(t))
	const workers, nkeys = 4, 40
	clients := make([]*broker.Client, workers)
	for i := range clients {
		c, err := pgClient(srv, cluster.URL(), ns, 100000, 1000)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients[i] = c
	}
	probe, err := pgstore.Open(ctx, cluster.URL(), srv.AccountNumber, pgstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := pgstore.GuaranteeOf(probe); g != want {
		t.Fatalf("guarantee %q before the failover; want %q", g, want)
	}
	if w, ok := probe.(idempotency.Witness); !ok || w.VouchesNew() != (want == pgstore.SynchronousStandby) {
		t.Fatalf("VouchesNew = %v with %s", ok && w.VouchesNew(), want)
	}
	probe.Close()

	var mu sync.Mutex
	placedBefore := map[string]string{} // key → order id, returned before the kill
	var killed bool
	acks := make(chan struct{}, workers*nkeys)
	var wg sync.WaitGroup
	for w, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range nkeys {
				key := fmt.Sprintf("k%02d", (k+w*nkeys/workers)%nkeys) // each worker starts elsewhere
				o, err := c.Place(ctx, key, pgBuy)
				mu.Lock()
				if err == nil && !killed {
					placedBefore[key] = o.ID
				}
				mu.Unlock()
				if err == nil {
					acks <- struct{}{}
				}
			}
		}()
	}
	for range nkeys / 3 {
		<-acks
	}
	s, err := pgstore.Open(ctx, cluster.URL(), srv.AccountNumber, pgstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	before, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	mu.Lock()
	killed = true
	mu.Unlock()
	if err := cluster.KillPrimary(); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Promote(); err != nil {
		t.Fatal(err)
	}
	// Placing resumes: a fresh key is placed, with no operator action.
	promotedAt := time.Now()
	var resume time.Duration
	for i := 0; ; i++ {
		if _, err := clients[0].Place(ctx, fmt.Sprint("fresh-", i), pgBuy); err == nil {
			resume = time.Since(promotedAt)
			break
		} else if time.Since(promotedAt) > 30*time.Second {
			t.Fatalf("no Place succeeded within 30 s of the promotion: %v\n%s", err, cluster.Logs())
		}
		time.Sleep(100 * time.Millisecond) // the real servers' time
	}
	wg.Wait()

	// Every key ends with its one order; a claim a Place cut short by the
	// kill left behind is taken up by its own Client, or after its lease.
	for k := range nkeys {
		key := fmt.Sprintf("k%02d", k)
		var o *broker.Order
		var err error
		for attempt := 0; attempt < 120; attempt++ {
			for _, c := range clients {
				if o, err = c.Place(ctx, key, pgBuy); !errors.Is(err, idempotency.ErrInProgress) && !errors.Is(err, broker.ErrUnavailable) {
					break
				}
			}
			if !errors.Is(err, idempotency.ErrInProgress) && !errors.Is(err, broker.ErrUnavailable) {
				break
			}
			time.Sleep(time.Second) // a lease lapsing on the server's clock
		}
		if err != nil {
			t.Fatalf("Place(%s) after the failover: %v\n%s", key, err, cluster.Logs())
		}
		mu.Lock()
		id, ok := placedBefore[key]
		mu.Unlock()
		if ok && id != o.ID {
			t.Fatalf("key %s: order %s before the kill, %s after", key, id, o.ID)
		}
	}
	if dups := srv.Ledger().DuplicateClientIDs(); len(dups) > 0 {
		t.Fatalf("client_order_ids with two orders: %v", dups)
	}
	keyed := 0
	for k := range nkeys {
		keyed += len(srv.Ledger().OrdersByClientID(clients[0].ClientOrderID(fmt.Sprintf("k%02d", k))))
	}
	if keyed != nkeys {
		t.Fatalf("%d orders at the venue for %d keys", keyed, nkeys)
	}

	s, err = pgstore.Open(ctx, cluster.URL(), srv.AccountNumber, pgstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lost := 0
	for _, rec := range before {
		got, err := s.Get(ctx, rec.ClientOrderID)
		if err != nil || (rec.OrderID != "" && got.OrderID != rec.OrderID) {
			lost++
			if standby == pgtest.SyncStandby {
				t.Errorf("intent %s (%s before the kill): %+v, %v after", rec.ClientOrderID, rec.State, got, err)
			}
		}
	}
	t.Logf("%s: primary killed after %d acks and the standby promoted: %d intents on record before, %d lost; %d keys, %d orders for them, 0 duplicates; placing resumed %v after the promotion",
		want, nkeys/3, len(before), lost, nkeys, keyed, resume.Round(time.Millisecond))
	if resume > 10*time.Second {
		t.Errorf("placing resumed %v after the promotion; want within 10 s", resume)
	}
}

// pgCARoots reads a PEM file of CAs for transport.Config.RootCAs, or nil
// for no file.
func pgCARoots(path string) (*x509.CertPool, error) {
	if path == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", path)
	}
	return pool, nil
}
