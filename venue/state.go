package venue

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/shopspring/decimal"
)

// stateVersion is the version of the state file's format.
const stateVersion = 1

// venueState is the venue's book as a state file holds it: the seed, the
// order id sequence, each account's cash, holdings and 30-day volume, and
// every order the venue holds (not the generated Config.BulkOrders ones, not
// the ledger, not the token buckets or faults).
type venueState struct {
	Version  int            `json:"version"`
	Seed     uint64         `json:"seed"`
	Seq      int64          `json:"seq"`
	Accounts []accountState `json:"accounts"`
	Orders   []orderState   `json:"orders"`
}

type accountState struct {
	Number   string                     `json:"account_number"`
	Cash     decimal.Decimal            `json:"cash"`
	Holdings map[string]decimal.Decimal `json:"holdings"`
	Volume   volumeState                `json:"thirty_day_volume"`
}

// volumeState is an account's volume: what it started with, until when
// that counts, and its filled notional by UTC day number.
type volumeState struct {
	Carried decimal.Decimal           `json:"carried"`
	Until   time.Time                 `json:"until"`
	Days    map[int64]decimal.Decimal `json:"days,omitempty"`
}

type execState struct {
	Price decimal.Decimal `json:"price"`
	Qty   decimal.Decimal `json:"quantity"`
	At    time.Time       `json:"at"`
}

type orderState struct {
	ID, ClientID, Account, Symbol, Side, Type string
	Qty, QuoteAmount, Limit, Stop, FeeRatio   decimal.Decimal
	HasQuote, HasLimit, HasStop, Triggered    bool
	State                                     string
	Created, Updated, LastEval                time.Time
	CancelAt, ExpiresAt                       time.Time `json:",omitzero"`
	TimeInForce                               string    `json:",omitempty"`
	Seq                                       int64
	Executions                                []execState `json:",omitempty"`
	Filled, Notional, Fee                     decimal.Decimal
}

// SaveState writes the venue's book to path atomically (a temporary file
// in the same directory, synced, then renamed over path), for
// Config.StateFile to start a later venue from. It is safe to call while
// the venue serves.
func (v *Venue) SaveState(path string) error {
	v.e.mu.Lock()
	b, err := json.Marshal(v.e.state())
	v.e.mu.Unlock()
	if err != nil {
		return fmt.Errorf("venue: save state: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("venue: save state: %w", err)
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("venue: save state: %w", err)
	}
	return nil
}

// state returns the book. Caller holds mu.
func (v *engine) state() venueState {
	st := venueState{Version: stateVersion, Seed: v.seed, Seq: v.seq}
	for _, a := range v.accounts {
		st.Accounts = append(st.Accounts, accountState{Number: a.Number, Cash: a.cash, Holdings: a.holdings,
			Volume: volumeState{a.volume.carried, a.volume.until, a.volume.days}})
	}
	for _, o := range v.orders {
		so := orderState{ID: o.id, ClientID: o.clientID, Account: o.account, Symbol: o.symbol, Side: o.side, Type: o.typ,
			Qty: o.qty, QuoteAmount: o.quoteAmt, Limit: o.limit, Stop: o.stop, FeeRatio: o.feeRatio,
			HasQuote: o.hasQuote, HasLimit: o.hasLimit, HasStop: o.hasStop, Triggered: o.triggered,
			State: o.state, Created: o.created, Updated: o.updated, LastEval: o.lastEval,
			CancelAt: o.cancelAt, ExpiresAt: o.expiresAt, TimeInForce: o.tif, Seq: o.seq,
			Filled: o.filled, Notional: o.notional, Fee: o.fee}
		for _, e := range o.execs {
			so.Executions = append(so.Executions, execState{e.price, e.qty, e.at})
		}
		st.Orders = append(st.Orders, so)
	}
	return st
}

// loadStateFile replaces the book with the one saved at path, if it
// exists. Only newEngine's caller calls it, before the venue serves.
func (v *engine) loadStateFile(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("venue: state file: %w", err)
	}
	var st venueState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("venue: state file %s: %w", path, err)
	}
	if st.Version != stateVersion {
		return fmt.Errorf("venue: state file %s: version %d, want %d", path, st.Version, stateVersion)
	}
	if st.Seed != v.seed {
		return fmt.Errorf("venue: state file %s was saved by a venue of seed %d, not %d", path, st.Seed, v.seed)
	}
	v.orders, v.byID, v.byClient, v.due, v.seq = nil, map[string]*order{}, map[string][]*order{}, nil, st.Seq
	for _, a := range v.accounts {
		a.resCash, a.resAssets = decimal.Zero, map[string]decimal.Decimal{}
	}
	for _, as := range st.Accounts {
		a := v.byNumber[as.Number]
		if a == nil {
			return fmt.Errorf("venue: state file %s: account %s is not this venue's", path, as.Number)
		}
		a.cash, a.holdings = as.Cash, map[string]decimal.Decimal{}
		a.volume = volume{carried: as.Volume.Carried, until: as.Volume.Until, days: as.Volume.Days}
		for k, q := range as.Holdings {
			a.holdings[k] = q
		}
	}
	for _, s := range st.Orders {
		p := v.bySymbol[s.Symbol]
		if p == nil || v.byNumber[s.Account] == nil || v.byID[s.ID] != nil {
			return fmt.Errorf("venue: state file %s: order %s: unknown symbol or account, or a repeated id", path, s.ID)
		}
		o := &order{id: s.ID, clientID: s.ClientID, account: s.Account, symbol: s.Symbol, side: s.Side, typ: s.Type, pair: p,
			qty: s.Qty, quoteAmt: s.QuoteAmount, limit: s.Limit, stop: s.Stop, feeRatio: s.FeeRatio,
			hasQuote: s.HasQuote, hasLimit: s.HasLimit, hasStop: s.HasStop, triggered: s.Triggered,
			state: s.State, created: s.Created, updated: s.Updated, lastEval: s.LastEval,
			cancelAt: s.CancelAt, expiresAt: s.ExpiresAt, tif: s.TimeInForce, seq: s.Seq,
			filled: s.Filled, notional: s.Notional, fee: s.Fee}
		for _, e := range s.Executions {
			o.execs = append(o.execs, execution{e.Price, e.Qty, e.At})
		}
		v.insertOrder(o)
	}
	return nil
}
