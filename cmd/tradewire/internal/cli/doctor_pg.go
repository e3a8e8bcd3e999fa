package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/tradewire/tradewire/idempotency/pgstore"
	"github.com/tradewire/tradewire/internal/pgconn"
)

// doctorPostgres reports the fleet's PostgreSQL: the hosts, the schema
// versions tradewire keeps there, and the guarantee the intent store
// vouches with, read from the server's replication settings.
func (a *app) doctorPostgres(ctx context.Context, d *doctorReport, f fleetServer, account string) {
	store, err := pgstore.Open(ctx, f.url, account, pgstore.Config{Clock: a.clock()})
	if err != nil {
		d.fail("postgres", f.redact(err.Error()), "start the fleet's PostgreSQL, or point --"+f.flag+" (env "+f.env+") at its primary")
		return
	}
	defer store.Close()
	schema := "schema unknown"
	if pool, err := pgconn.Connect(ctx, f.url, pgconn.Options{}); err == nil {
		rows, err := pool.Query(ctx, `SELECT component || ' v' || version FROM tradewire_schema ORDER BY component`)
		if err == nil {
			var parts []string
			for rows.Next() {
				var s string
				if rows.Scan(&s) == nil {
					parts = append(parts, s)
				}
			}
			rows.Close()
			schema = "schema " + strings.Join(parts, ", ")
		}
		pool.Close()
	}
	where := fmt.Sprintf("%s, %s", pgconn.Hosts(f.url), schema)
	g, _ := pgstore.GuaranteeOf(store)
	switch g {
	case pgstore.SynchronousStandby:
		d.ok("postgres", where+", synchronous standby: the intent store vouches for a new key (one request per Place) and survives the primary's loss")
	case pgstore.SingleServer:
		d.warn("postgres", where+", a single server: the intent store vouches for the server's own durability only",
			"add a synchronous standby (synchronous_standby_names, synchronous_commit = on) so that a failover loses no claim")
	default:
		d.warn("postgres", where+", an asynchronous standby: a failover can lose a commit, so the store does not vouch and Place looks the symbol up first (two requests)",
			"make the standby synchronous (synchronous_standby_names, synchronous_commit = on)")
	}
}
