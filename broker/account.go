package broker

import (
	"context"
	"fmt"
	"iter"
	"net/url"

	"github.com/tradewire/tradewire/internal/wire"
)

// v2 paths (internal/wire holds them all).
const (
	pathAccounts       = wire.PathAccounts
	pathHoldings       = wire.PathHoldings
	pathTradingPairs   = wire.PathTradingPairs
	pathBestBidAsk     = wire.PathBestBidAsk
	pathEstimatedPrice = wire.PathEstimatedPrice
	pathOrders         = wire.PathOrders
)

// accountCache holds the resolved account number. lock (capacity 1) is
// held while reading or resolving it, so that concurrent first callers
// send one accounts read between them, and a waiter can still give up
// when its context ends.
type accountCache struct {
	lock   chan struct{}
	number string
}

func (a *accountCache) init() { a.lock = make(chan struct{}, 1) }

func (a *accountCache) acquire(ctx context.Context) error {
	select {
	case a.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (a *accountCache) release() { <-a.lock }

// Account reads the account afresh (status, buying power and fee tier
// change) and caches its number for the calls that need one. Without
// Config.AccountNumber the venue's list must hold exactly one account;
// otherwise the error matches ErrAccount.
func (c *Client) Account(ctx context.Context) (*Account, error) {
	if err := c.acct.acquire(ctx); err != nil {
		return nil, err
	}
	defer c.acct.release()
	return c.readAccountLocked(ctx)
}

func (c *Client) readAccountLocked(ctx context.Context) (*Account, error) {
	cc := callConfig{pageCap: c.pageCap}
	var found []Account
	for a, err := range paginate[wireAccount](ctx, c, cc, constTarget(pathAccounts)) {
		if err != nil {
			return nil, err
		}
		if c.fixedAccount == "" || a.AccountNumber == c.fixedAccount {
			found = append(found, a)
		}
	}
	switch {
	case len(found) == 1:
	case c.fixedAccount != "":
		return nil, fmt.Errorf("broker: %w: the venue lists no account %s for this API key", ErrAccount, c.fixedAccount)
	case len(found) == 0:
		return nil, fmt.Errorf("broker: %w: the venue lists no account for this API key", ErrAccount)
	default:
		return nil, fmt.Errorf("broker: %w: the venue lists %d accounts; choose one with Config.AccountNumber", ErrAccount, len(found))
	}
	if !validAccountNumber(found[0].AccountNumber) {
		return nil, &decodeError{Path: pathAccounts, Err: fmt.Errorf("account_number %q is not letters and digits", wire.Clip(found[0].AccountNumber))}
	}
	c.acct.number = found[0].AccountNumber
	return &found[0], nil
}

// accountNumber returns the cached account number, resolving it with one
// accounts read the first time.
func (c *Client) accountNumber(ctx context.Context) (string, error) {
	if c.fixedAccount != "" {
		return c.fixedAccount, nil
	}
	if err := c.acct.acquire(ctx); err != nil {
		return "", err
	}
	defer c.acct.release()
	if c.acct.number != "" {
		return c.acct.number, nil
	}
	a, err := c.readAccountLocked(ctx)
	if err != nil {
		return "", err
	}
	return a.AccountNumber, nil
}

// knownAccount returns the account number if it is already known (set or
// resolved), without reading the venue; "" otherwise, or while another
// call is resolving it.
func (c *Client) knownAccount() string {
	if c.fixedAccount != "" {
		return c.fixedAccount
	}
	select {
	case c.acct.lock <- struct{}{}:
		defer c.acct.release()
		return c.acct.number
	default:
		return ""
	}
}

func constTarget(t string) func(context.Context) (string, error) {
	return func(context.Context) (string, error) { return t, nil }
}

// Holdings lists the account's holdings, optionally only the given asset
// codes ("BTC"), fetching pages lazily as the loop asks for items. Collect
// reads them all.
func (c *Client) Holdings(ctx context.Context, assetCodes []string, opts ...Paging) iter.Seq2[Holding, error] {
	cc, err := c.listConfig(opts)
	if err != nil {
		return errSeq[Holding](err)
	}
	for _, a := range assetCodes {
		if !validCode(a) {
			return errSeq[Holding](&ArgumentError{Field: "asset_code", Value: a, Reason: "must be upper-case letters and digits, like BTC"})
		}
	}
	return paginate[wireHolding](ctx, c, cc, func(ctx context.Context) (string, error) {
		n, err := c.accountNumber(ctx)
		if err != nil {
			return "", err
		}
		q := url.Values{"account_number": {n}}
		if len(assetCodes) > 0 {
			q["asset_code"] = append([]string(nil), assetCodes...)
		}
		return pathHoldings + "?" + q.Encode(), nil
	})
}

func validAccountNumber(s string) bool { return wire.ValidAccountNumber(s) }

func validCode(s string) bool { return wire.ValidCode(s) }

func validSymbol(s string) bool { return wire.ValidSymbol(s) }

func checkSymbol(field, s string) error {
	if !validSymbol(s) {
		return &ArgumentError{Field: field, Value: s, Reason: "must be an upper-case pair like BTC-USD"}
	}
	return nil
}
