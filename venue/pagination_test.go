package venue

import (
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// listPage is one page of a listing, as the venue answered it.
type listPage struct {
	Next, Previous *string
	Results        []map[string]any
}

// page reads target (path?query) and decodes it.
func (h *harness) page(target string) listPage {
	h.t.Helper()
	resp, b := h.do("GET", target, nil)
	mustStatus(h.t, resp, b, 200)
	var p listPage
	if err := json.Unmarshal(b, &p); err != nil {
		h.t.Fatalf("GET %s: %v: %s", target, err, b)
	}
	return p
}

// rel is the path?query of an absolute link.
func rel(t testing.TB, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil || u.Scheme == "" || u.Host == "" {
		t.Fatalf("link %q is not absolute: %v", link, err)
	}
	return u.RequestURI()
}

// keys lists the value of field in every row of pages, in order.
func keys(pages []listPage, field string) []string {
	var out []string
	for _, p := range pages {
		for _, r := range p.Results {
			out = append(out, r[field].(string))
		}
	}
	return out
}

// walk follows next links from target, then previous links back from the
// last page, and returns the pages read each way (the backward ones in the
// order read, last page first).
func (h *harness) walk(target string) (forward, backward []listPage) {
	h.t.Helper()
	for range 100 {
		p := h.page(target)
		forward = append(forward, p)
		if p.Next == nil {
			break
		}
		target = rel(h.t, *p.Next)
	}
	last := forward[len(forward)-1]
	for range 100 {
		if last.Previous == nil {
			break
		}
		last = h.page(rel(h.t, *last.Previous))
		backward = append(backward, last)
	}
	return forward, backward
}

// checkMirror: the previous links lead back through the same pages the
// next links led through, row for row, and only the first page has none.
func checkMirror(t *testing.T, name string, forward, backward []listPage, field string) {
	t.Helper()
	if forward[0].Previous != nil {
		t.Errorf("%s: the first page has a previous link %q", name, *forward[0].Previous)
	}
	for i, p := range forward[1:] {
		if p.Previous == nil {
			t.Errorf("%s: page %d has no previous link", name, i+2)
		}
	}
	if len(backward) != len(forward)-1 {
		t.Fatalf("%s: %d pages forwards, but %d back from the last", name, len(forward), len(backward))
	}
	for i, p := range backward {
		want := forward[len(forward)-2-i]
		if got, w := keys([]listPage{p}, field), keys([]listPage{want}, field); !slices.Equal(got, w) {
			t.Errorf("%s: %d pages back from the last: %v, want %v", name, i+1, got, w)
		}
		if p.Next == nil {
			t.Errorf("%s: a page read backwards has no next link", name)
		}
	}
}

// TestListLimit: every listing takes limit (an integer from 1 to
// maxPageLimit) as its page size, keeps it in its links, and answers any
// other value with a 400 naming limit; without limit, pages hold the
// venue's page size.
func TestListLimit(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{History: 12, PageSize: 3})
	acct := "?account_number=" + demoAccountNumber
	lists := []struct{ name, target string }{
		{"trading_pairs", pathPairs + "?x=1"},
		{"holdings", pathHoldings + acct},
		{"orders", pathOrders + acct},
		{"accounts", pathAccounts + "?x=1"},
	}
	bad := map[string]string{
		"ten":                   "A valid integer is required.",
		"1.5":                   "A valid integer is required.",
		"":                      "A valid integer is required.",
		"0x10":                  "A valid integer is required.",
		"0":                     "Ensure this value is greater than or equal to 1.",
		"-1":                    "Ensure this value is greater than or equal to 1.",
		"-99999999999999999999": "Ensure this value is greater than or equal to 1.",
		"1001":                  "Ensure this value is less than or equal to 1000.",
		"99999999999999999999":  "Ensure this value is less than or equal to 1000.",
	}
	for _, l := range lists {
		for limit, detail := range bad {
			target := l.target + "&limit=" + url.QueryEscape(limit)
			resp, b := h.do("GET", target, nil)
			mustStatus(t, resp, b, 400)
			var env errorEnvelope
			if err := json.Unmarshal(b, &env); err != nil || env.Type != "validation_error" || len(env.Errors) != 1 ||
				env.Errors[0].Attr == nil || *env.Errors[0].Attr != "limit" || env.Errors[0].Detail != detail {
				t.Errorf("GET %s: %s, want detail %q on limit", target, b, detail)
			}
		}
	}
	for _, l := range lists[:3] {
		for _, c := range []struct {
			limit string
			want  int
		}{{"", 3}, {"&limit=2", 2}, {"&limit=%2B1", 1}, {"&limit=1000", 0}} {
			p := h.page(l.target + c.limit)
			if n := len(p.Results); c.want > 0 && n != c.want || c.want == 0 && (n == 0 || p.Next != nil) {
				t.Errorf("GET %s%s: %d rows (next %v), want %d", l.target, c.limit, n, p.Next != nil, c.want)
			}
			if c.limit == "&limit=2" {
				if p.Next == nil {
					t.Fatalf("GET %s%s: no next link", l.target, c.limit)
				}
				if q := mustQuery(t, *p.Next); q.Get("limit") != "2" {
					t.Errorf("%s: next link %s drops limit", l.name, *p.Next)
				}
				if n := len(h.page(rel(t, *p.Next)).Results); n != 2 {
					t.Errorf("%s: the second page holds %d rows, want 2", l.name, n)
				}
			}
		}
	}
	// A venue whose page size is above the maximum accepts limits up to it.
	big := setup(t, engineConfig{PageSize: 1500})
	if resp, b := big.do("GET", pathPairs+"?limit=1500", nil); resp.StatusCode != 200 {
		t.Errorf("limit = page size 1500: %d %s", resp.StatusCode, b)
	}
}

func mustQuery(t testing.TB, link string) url.Values {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}

// TestPreviousLinks: on every listing, the pages after the first carry a
// previous link, and following them from the last page reads the same
// pages back, row for row, with the same filters and limit; the first
// page's previous link is null. (Today's clients never follow previous;
// see internal/pages.)
func TestPreviousLinks(t *testing.T) {
	t.Parallel()
	acct := "?account_number=" + demoAccountNumber
	t.Run("trading_pairs", func(t *testing.T) {
		t.Parallel()
		h := setup(t, engineConfig{})
		for _, limit := range []string{"1", "2", "3", "100"} {
			fw, bw := h.walk(pathPairs + "?limit=" + limit)
			if limit != "100" && len(fw) < 2 {
				t.Fatalf("limit %s: %d pages", limit, len(fw))
			}
			checkMirror(t, "trading_pairs limit "+limit, fw, bw, "symbol")
		}
		// A previous link back to the start is the first page's own link.
		fw, _ := h.walk(pathPairs + "?limit=2")
		if got, want := rel(t, *fw[1].Previous), pathPairs+"?limit=2"; got != want {
			t.Errorf("page 2's previous link is %s, want %s", got, want)
		}
	})
	t.Run("holdings", func(t *testing.T) {
		t.Parallel()
		h := setup(t, engineConfig{})
		fw, bw := h.walk(pathHoldings + acct + "&limit=1")
		if len(fw) < 3 {
			t.Fatalf("%d pages of holdings", len(fw))
		}
		checkMirror(t, "holdings", fw, bw, "asset_code")
	})
	t.Run("orders", func(t *testing.T) {
		t.Parallel()
		// Stored and generated (bulk) orders interleave on one list.
		h := setup(t, engineConfig{History: 9, BulkOrders: 23})
		for _, target := range []string{
			pathOrders + acct + "&limit=4",
			pathOrders + acct + "&limit=1",
			pathOrders + acct + "&limit=7&side=buy",
			pathOrders + acct + "&limit=3&state=filled&created_at_start=2026-08-01T00:00:00Z",
		} {
			fw, bw := h.walk(target)
			if len(fw) < 3 {
				t.Fatalf("%s: %d pages", target, len(fw))
			}
			checkMirror(t, target, fw, bw, "id")
			all := keys(fw, "id")
			if ids := slices.Clone(all); len(slices.Compact(slices.Sorted(slices.Values(ids)))) != len(all) {
				t.Errorf("%s: an order listed twice forwards", target)
			}
		}
		// Negative control: the filters hold backwards too, so a walk
		// without them sees more orders.
		fwAll, _ := h.walk(pathOrders + acct + "&limit=7")
		fwBuy, bwBuy := h.walk(pathOrders + acct + "&limit=7&side=buy")
		if len(keys(fwAll, "id")) <= len(keys(fwBuy, "id")) {
			t.Fatalf("side=buy lists %d orders of %d", len(keys(fwBuy, "id")), len(keys(fwAll, "id")))
		}
		for _, p := range bwBuy {
			for _, r := range p.Results {
				if r["side"] != "buy" {
					t.Errorf("side=buy read backwards lists a %v order", r["side"])
				}
			}
		}
	})
	t.Run("orders created meanwhile", func(t *testing.T) {
		t.Parallel()
		h := setup(t, engineConfig{History: 6})
		first := h.page(pathOrders + acct + "&limit=3")
		second := h.page(rel(t, *first.Next))
		h.create(orderBody("4d0c2c83-9d5a-4a8b-8a51-0d6a0f3b5e01", "buy", "limit", "BTC-USD",
			`{"asset_quantity":"0.0001","limit_price":"1000.00","time_in_force":"gtc"}`), 201)
		// Back from page 2: the three orders page 1 showed, then a page
		// with only the new order, which has no previous link.
		back := h.page(rel(t, *second.Previous))
		if got, want := keys([]listPage{back}, "id"), keys([]listPage{first}, "id"); !slices.Equal(got, want) {
			t.Errorf("back from page 2: %v, want page 1's %v", got, want)
		}
		if back.Previous == nil {
			t.Fatal("no previous link to the order created meanwhile")
		}
		newest := h.page(rel(t, *back.Previous))
		if len(newest.Results) != 1 || newest.Previous != nil || newest.Next == nil {
			t.Fatalf("the newest page: %d rows, previous %v, next %v", len(newest.Results), newest.Previous != nil, newest.Next != nil)
		}
		if again := h.page(rel(t, *newest.Next)); !slices.Equal(keys([]listPage{again}, "id"), keys([]listPage{first}, "id")) {
			t.Errorf("next from the newest page: %v, want %v", keys([]listPage{again}, "id"), keys([]listPage{first}, "id"))
		}
	})
}

// TestListCursorRefused: a cursor the venue did not issue is a 404, in
// either direction.
func TestListCursorRefused(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{History: 3})
	acct := "?account_number=" + demoAccountNumber
	for _, c := range []string{"x", encodeCursor("q:1:2"), encodeCursor("p:1"), encodeCursor("p:a:1"), encodeCursor("k:1:b")} {
		resp, b := h.do("GET", pathOrders+acct+"&cursor="+url.QueryEscape(c), nil)
		mustStatus(t, resp, b, 404)
	}
	for _, c := range []string{encodeCursor("o:-1"), encodeCursor("o:" + strconv.Itoa(1000)), encodeCursor("k:1:1")} {
		resp, b := h.do("GET", pathPairs+"?cursor="+url.QueryEscape(c), nil)
		mustStatus(t, resp, b, 404)
	}
}

// TestForeignNextLeavesPrevious: a foreign_next fault moves a page's next
// link to another host and leaves its previous link on the venue's own.
func TestForeignNextLeavesPrevious(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{History: 9})
	acct := "?account_number=" + demoAccountNumber
	for _, target := range []string{pathPairs + "?limit=1", pathOrders + acct + "&limit=2"} {
		second := rel(t, *h.page(target).Next)
		h.v.inject(Fault{Kind: faultForeignNext, Path: target[:strings.Index(target, "?")], Location: "https://evil.example"})
		p := h.page(second)
		if p.Next == nil || !strings.HasPrefix(*p.Next, "https://evil.example/") {
			t.Errorf("%s: next %v, want it on the foreign host", second, p.Next)
		}
		if p.Previous == nil || strings.HasPrefix(*p.Previous, "https://evil.example") || rel(t, *p.Previous) == "" {
			t.Errorf("%s: previous %v, want it on the venue", second, p.Previous)
		}
	}
}
