package pgstore

import (
	"context"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/internal/pgconn"
)

// Guarantee is what a Store opened by Open vouches for, as the server's
// replication settings say.
type Guarantee string

// The guarantees.
const (
	// SynchronousStandby: synchronous_commit is on (or remote_write,
	// remote_apply) and synchronous_standby_names names standbys, so a
	// commit returns only once a synchronous standby has it (with none
	// connected, commits wait, and calls fail after Config.Timeout). A
	// failover to that standby keeps every claim: the Store vouches.
	SynchronousStandby Guarantee = "synchronous_standby"
	// SingleServer: one server, no standby streaming, synchronous_commit
	// not off, and the URL names one host. The Store vouches for the
	// server's own durability only, as the bolt store does for its disk:
	// a restored backup or a replacement server can lack claims.
	SingleServer Guarantee = "single_server"
	// AsynchronousStandby: anything else (asynchronous standbys, several
	// hosts in the URL without a synchronous standby, synchronous_commit
	// off, a server in recovery): a failover can lose commits, so the
	// Store does not vouch and orders.Placer looks an order up before
	// its first send.
	AsynchronousStandby Guarantee = "asynchronous_standby"
)

// GuaranteeOf returns the guarantee of a Store opened by Open, as read
// from the server at Open and again on every new connection (after a
// failover, the promoted server's), and false for any other store.
func GuaranteeOf(s idempotency.Store) (Guarantee, bool) {
	st, ok := s.(*store)
	if !ok {
		return "", false
	}
	return st.vouch.get(), true
}

// VouchesNew implements idempotency.Witness: true under
// SynchronousStandby and SingleServer (see GuaranteeOf). Unlike the other
// stores', its answer can change while the Store is open: it is the
// guarantee read on the Store's newest connection, so after a failover to
// a server with no synchronous standby of its own it turns false, and
// orders.Placer looks up before each first send from then on.
func (s *store) VouchesNew() bool { return s.vouch.get() != AsynchronousStandby }

// vouching holds the guarantee read on the newest connection.
type vouching struct {
	hosts int // distinct hosts the URL names
	mu    sync.Mutex
	g     Guarantee
}

func (v *vouching) get() Guarantee {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.g == "" {
		return AsynchronousStandby
	}
	return v.g
}

// check reads the server's replication settings on a new connection.
func (v *vouching) check(ctx context.Context, c *pgx.Conn) error {
	var (
		commit, names string
		recovery      bool
		standbys      int64
	)
	err := c.QueryRow(ctx, `SELECT current_setting('synchronous_commit'), current_setting('synchronous_standby_names'),
		pg_is_in_recovery(), (SELECT count(*) FROM pg_stat_replication)`).Scan(&commit, &names, &recovery, &standbys)
	if err != nil {
		return err
	}
	g := guarantee(commit, names, recovery, int(standbys), v.hosts)
	v.mu.Lock()
	v.g = g
	v.mu.Unlock()
	return nil
}

// guarantee decides the Guarantee from the server's synchronous_commit,
// synchronous_standby_names, pg_is_in_recovery(), its standbys in
// pg_stat_replication, and the number of hosts the URL names.
func guarantee(commit, names string, recovery bool, standbys, hosts int) Guarantee {
	syncCommit := commit == "on" || commit == "remote_write" || commit == "remote_apply"
	named := strings.TrimSpace(names) != ""
	switch {
	case recovery:
		return AsynchronousStandby
	case syncCommit && named:
		return SynchronousStandby
	case !named && standbys == 0 && hosts == 1 && commit != "off":
		return SingleServer
	}
	return AsynchronousStandby
}

// hostCount is how many distinct hosts url names.
func hostCount(url string) int {
	seen := map[string]bool{}
	for _, h := range strings.Split(pgconn.Hosts(url), ",") {
		seen[h] = true
	}
	return len(seen)
}
