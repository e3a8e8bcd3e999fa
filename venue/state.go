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
	Fee   decimal.Decimal `json:"fee,omitzero"`
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

// orderFields pairs each field of an order's saved form with the order's
// own: the one statement of what a state file keeps of an order. state
// copies each pair into the saved form, loadStateFile back into an order.
func orderFields(s *orderState, o *order) []fieldPair {
	return []fieldPair{
		bind(&s.ID, &o.id), bind(&s.ClientID, &o.clientID), bind(&s.Account, &o.account),
		bind(&s.Symbol, &o.symbol), bind(&s.Side, &o.side), bind(&s.Type, &o.typ),
		bind(&s.Qty, &o.qty), bind(&s.QuoteAmount, &o.quoteAmt), bind(&s.Limit, &o.limit),
		bind(&s.Stop, &o.stop), bind(&s.FeeRatio, &o.feeRatio),
		bind(&s.HasQuote, &o.hasQuote), bind(&s.HasLimit, &o.hasLimit), bind(&s.HasStop, &o.hasStop),
		bind(&s.Triggered, &o.triggered), bind(&s.State, &o.state),
		bind(&s.Created, &o.created), bind(&s.Updated, &o.updated), bind(&s.LastEval, &o.lastEval),
		bind(&s.CancelAt, &o.cancelAt), bind(&s.ExpiresAt, &o.expiresAt),
		bind(&s.TimeInForce, &o.tif), bind(&s.Seq, &o.seq),
		bind(&s.Filled, &o.filled), bind(&s.Notional, &o.notional), bind(&s.Fee, &o.fee),
		{save: func() {
			s.Executions = nil
			for _, e := range o.execs {
				s.Executions = append(s.Executions, execState{e.price, e.qty, e.fee, e.at})
			}
		}, load: func() {
			o.execs = nil
			for _, e := range s.Executions {
				fee := e.Fee
				if fee.IsZero() { // a file that kept the order's fee alone
					fee = e.Price.Mul(e.Qty).Mul(o.feeRatio)
				}
				o.execs = append(o.execs, execution{e.Price, e.Qty, fee, e.At})
			}
		}},
	}
}

// fieldPair copies one field of a saved form from (save) or to (load) the
// field it keeps.
type fieldPair struct{ save, load func() }

func bind[T any](saved, live *T) fieldPair {
	return fieldPair{save: func() { *saved = *live }, load: func() { *live = *saved }}
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
		var so orderState
		for _, f := range orderFields(&so, o) {
			f.save()
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
		o := &order{pair: p}
		for _, f := range orderFields(&s, o) {
			f.load()
		}
		v.insertOrder(o)
	}
	return nil
}
