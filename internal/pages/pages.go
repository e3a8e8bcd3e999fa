// Package pages is the one paginator of the venue's v2 listings, used by
// broker's listings and fee sweep and by the Placer's lookup: it follows
// next links on the base URL only, refuses a repeated link, stops at a
// page cap, and says when a listing's end looks cut off. It reads a page's
// next link alone: previous links (the venue fills them on every page but
// the first) are never decoded, so never followed.
package pages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Getter reads pages (a *transport.Client, whose answers are R =
// *transport.Response) and resolves a next link to a request-target on
// its base URL.
type Getter[R any] interface {
	Get(ctx context.Context, target string) (R, error)
	Target(link string) (string, error)
}

var (
	// ErrRepeated: a next link led back to a page already read.
	ErrRepeated = errors.New("pagination repeated a cursor")
	// ErrVanished: the last page holds as many rows as every full page
	// before it but has no next link, as if the link were dropped. (A
	// list whose size is an exact multiple of the page size looks the
	// same.) Walk returns it after visiting that page; a caller that
	// trusts the end may ignore it.
	ErrVanished = errors.New("a last page as full as every page before it has no next link")
)

// CapError is a next link after the cap's last page.
type CapError struct{ Pages int }

func (e *CapError) Error() string { return fmt.Sprintf("more than %d pages", e.Pages) }

// LinkError is a next link that is not on the base URL.
type LinkError struct {
	Page int
	Err  error
}

func (e *LinkError) Error() string { return fmt.Sprintf("page %d: next link: %v", e.Page, e.Err) }
func (e *LinkError) Unwrap() error { return e.Err }

// DecodeError is a page that is not {"next": …, "results": […]}.
type DecodeError struct {
	Page   int
	Target string
	Err    error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("page %d does not decode: %v", e.Page, e.Err)
}
func (e *DecodeError) Unwrap() error { return e.Err }

// Own reports whether err is one of Walk's own (the listing could not be
// read whole), not a failure of Get.
func Own(err error) bool {
	var ce *CapError
	var le *LinkError
	var de *DecodeError
	return errors.Is(err, ErrVanished) || errors.Is(err, ErrRepeated) || errors.As(err, &ce) || errors.As(err, &le) || errors.As(err, &de)
}

// Walk reads the listing at first, a page at a time, takes each answer's
// body with body, and hands each page's rows to visit, which returns false to stop. A failure of Get is
// returned as it is. A repeated link is found in constant memory (Brent's
// cycle detection: each link is compared with a saved one, re-saved at
// powers of two), so a self-loop is caught before it is followed and a
// longer loop within a few pages of its start.
func Walk[R any](ctx context.Context, g Getter[R], body func(R) []byte, first string, pageCap int,
	visit func(page int, target string, rows []json.RawMessage) (more bool, err error)) error {
	target := first
	saved, power, steps := target, 1, 0
	fullSize := -1 // the row count of every earlier page, while all agree
	for page := 1; ; page++ {
		resp, err := g.Get(ctx, target)
		if err != nil {
			return err
		}
		var p struct {
			Next    *string           `json:"next"`
			Results []json.RawMessage `json:"results"`
		}
		if err := json.Unmarshal(body(resp), &p); err != nil {
			return &DecodeError{Page: page, Target: target, Err: err}
		}
		more, err := visit(page, target, p.Results)
		if err != nil || !more {
			return err
		}
		if p.Next == nil || *p.Next == "" {
			if page > 1 && len(p.Results) > 0 && len(p.Results) == fullSize {
				return ErrVanished
			}
			return nil
		}
		switch {
		case page == 1:
			fullSize = len(p.Results)
		case len(p.Results) != fullSize:
			fullSize = -1
		}
		next, err := g.Target(*p.Next)
		if err != nil {
			return &LinkError{Page: page, Err: err}
		}
		if next == saved || next == target {
			return fmt.Errorf("page %d: %w: %s", page, ErrRepeated, next)
		}
		if steps++; steps == power {
			saved, power, steps = next, power*2, 0
		}
		if page >= pageCap {
			return &CapError{Pages: page}
		}
		target = next
	}
}
