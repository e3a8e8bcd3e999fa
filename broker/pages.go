package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"

	"github.com/tradewire/tradewire/internal/pages"
	"github.com/tradewire/tradewire/transport"
)

// Paging adjusts one listing or fee summary. The zero value changes
// nothing. Given several, each field set wins over the ones before it.
type Paging struct {
	// MaxPages is this call's page cap, overriding Config.PageCap. Zero:
	// the Client's.
	MaxPages int
	// AllowPartial lets FeeSummary return what it read up to the page
	// cap, marked Partial, instead of failing. Listings refuse it: their
	// iterators already yield every item read before the *PageCapError.
	AllowPartial bool
	// OnProgress, when set, is called after each page is read, on the
	// caller's goroutine, with the running totals, so that a CLI can draw
	// a progress bar.
	OnProgress func(Progress)
}

type callConfig struct {
	pageCap      int
	allowPartial bool
	progress     func(Progress)
}

// Progress is how far a listing or fee summary has got.
type Progress struct {
	Pages int // pages read so far
	Items int // items on those pages
}

func (c *Client) callConfig(opts []Paging) (callConfig, error) {
	cc := callConfig{pageCap: c.pageCap}
	for _, o := range opts {
		if o.MaxPages != 0 {
			if o.MaxPages < 0 {
				return cc, &ArgumentError{Field: "MaxPages", Value: fmt.Sprint(o.MaxPages), Reason: "must not be negative"}
			}
			cc.pageCap = o.MaxPages
		}
		if o.AllowPartial {
			cc.allowPartial = true
		}
		if o.OnProgress != nil {
			cc.progress = o.OnProgress
		}
	}
	return cc, nil
}

// listConfig is callConfig for the listings, which refuse AllowPartial.
func (c *Client) listConfig(opts []Paging) (callConfig, error) {
	cc, err := c.callConfig(opts)
	if err == nil && cc.allowPartial {
		err = &ArgumentError{Field: "AllowPartial", Reason: "applies to FeeSummary only; a listing yields every item read, then the *PageCapError"}
	}
	return cc, err
}

// page is one page of a v2 listing.
type page[T any] struct {
	Next    *string `json:"next"`
	Results []T     `json:"results"`
}

// Collect reads every item of a listing into a slice. It returns the
// first error instead of a partial list.
func Collect[T any](seq iter.Seq2[T, error]) ([]T, error) {
	var out []T
	for v, err := range seq {
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// errSeq is an iterator that yields err alone.
func errSeq[T any](err error) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		yield(zero, err)
	}
}

// paginate reads a v2 listing of venue rows W lazily, yielding them
// converted to T: a page is fetched only when the consumer wants its first
// item, and only one page is held at a time.
//
// first returns the first page's request-target; it runs inside the
// iterator so that work it needs (resolving the account) is lazy too.
// next links are followed only on the base URL's scheme and host. A
// repeated next link fails (the error says so); it is found in constant
// memory (Brent's cycle detection: each link is compared with a saved one,
// re-saved at powers of two), so a self-loop is caught before it is
// followed and a longer loop within a few pages of its start. A next link
// after the cap's last page fails with *PageCapError.
func paginate[W venueRow[T], T any](ctx context.Context, c *Client, cc callConfig, first func(context.Context) (string, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		target, err := first(ctx)
		if err != nil {
			yield(zero, err)
			return
		}
		path := pathOf(target)
		items := 0
		stopped := false
		err = pages.Walk(ctx, c.tc, func(r *transport.Response) []byte { return r.Body }, target, cc.pageCap, func(page int, target string, rows []json.RawMessage) (bool, error) {
			items += len(rows)
			if cc.progress != nil {
				cc.progress(Progress{Pages: page, Items: items})
			}
			for _, raw := range rows {
				v, err := decodeAs[W](raw)
				if err != nil {
					return false, &decodeError{Path: pathOf(target), Err: err}
				}
				if !yield(v, nil) {
					stopped = true
					return false, nil
				}
			}
			return true, nil
		})
		var capErr *pages.CapError
		var linkErr *pages.LinkError
		var decErr *pages.DecodeError
		switch {
		case stopped, err == nil, errors.Is(err, pages.ErrVanished):
			return
		case errors.As(err, &capErr):
			c.log.Warn().Str("path", path).Int("pages", capErr.Pages).Msg("page cap reached")
			err = &PageCapError{Path: path, Pages: capErr.Pages}
		case errors.As(err, &linkErr):
			err = fmt.Errorf("broker: %s page %d: next link: %w", path, linkErr.Page, linkErr.Err)
		case errors.As(err, &decErr):
			err = &decodeError{Path: pathOf(decErr.Target), Err: decErr.Err}
		case errors.Is(err, pages.ErrRepeated):
			err = fmt.Errorf("broker: %s %w", path, err)
		}
		yield(zero, err)
	}
}
