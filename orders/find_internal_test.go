package orders

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
)

// Tests of one read of the orders list (find) against a scripted list:
// the pages it reads, and what it concludes from rows that repeat, copies
// of one client_order_id, and last pages without a next link.

// listRow is a row of the scripted list.
type listRow struct {
	ID, ClientOrderID, State string
	CreatedAt                time.Time
}

// scriptedList serves the orders list of rows (newest first) in pages of
// size, honouring created_at_start and created_at_end (inclusive) and a
// cursor that is an offset. edit, if set, rewrites each page it serves
// (n counts pages served, from 1; first is whether the request had no
// cursor).
type scriptedList struct {
	rows []listRow
	size int
	edit func(n int, first bool, results []listRow, next *string) ([]listRow, *string)

	mu      sync.Mutex
	served  int
	targets []string
}

func (s *scriptedList) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var start, end time.Time
	if v := q.Get("created_at_start"); v != "" {
		start, _ = time.Parse(time.RFC3339Nano, v)
	}
	if v := q.Get("created_at_end"); v != "" {
		end, _ = time.Parse(time.RFC3339Nano, v)
	}
	var match []listRow
	for _, row := range s.rows {
		if (start.IsZero() || !row.CreatedAt.Before(start)) && (end.IsZero() || !row.CreatedAt.After(end)) {
			match = append(match, row)
		}
	}
	off, _ := strconv.Atoi(q.Get("cursor"))
	page := match[min(off, len(match)):min(off+s.size, len(match))]
	var next *string
	if off+s.size < len(match) {
		q.Set("cursor", strconv.Itoa(off+s.size))
		link := "http://" + r.Host + r.URL.Path + "?" + q.Encode()
		next = &link
	}
	s.mu.Lock()
	s.served++
	n := s.served
	s.targets = append(s.targets, r.URL.RequestURI())
	s.mu.Unlock()
	if s.edit != nil {
		page, next = s.edit(n, q.Get("cursor") == "" || off == 0, page, next)
	}
	results := make([]map[string]any, len(page))
	for i, row := range page {
		results[i] = map[string]any{"id": row.ID, "client_order_id": row.ClientOrderID, "state": row.State,
			"created_at": row.CreatedAt.Format(time.RFC3339Nano)}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"next": next, "results": results})
}

// testCodec reads the facts of the scripted rows.
type testCodec struct{}

func (testCodec) Facts(raw []byte) (Facts, error) {
	var o struct {
		ID            string `json:"id"`
		ClientOrderID string `json:"client_order_id"`
		State         string `json:"state"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return Facts{}, err
	}
	if o.ID == "" {
		return Facts{}, errors.New("no id")
	}
	return Facts{ID: o.ID, ClientOrderID: o.ClientOrderID, Failed: o.State == "failed"}, nil
}

// since is the start of every scripted read; rows are created after it.
var since = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// rowsOf returns n open rows, newest first, one second apart: order
// o-1 (client_order_id c-1) is the newest.
func rowsOf(n int) []listRow {
	rows := make([]listRow, n)
	for i := range rows {
		rows[i] = listRow{ID: fmt.Sprintf("o-%d", i+1), ClientOrderID: fmt.Sprintf("c-%d", i+1), State: "open",
			CreatedAt: since.Add(time.Hour - time.Duration(i)*time.Second)}
	}
	return rows
}

func findOn(t *testing.T, s *scriptedList, pageCap int, want ...string) listing {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	key, err := signing.ParsePrivateKey("xQnTJVeQLmw1/Mg2YimEViSpw/SdJcgNXZ5kQkAXNPU=")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := signing.New("rh-api-6148effc-c0b1-486c-8940-a1d099456be6", key)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := transport.New(srv.URL, signer, transport.Config{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(tc, idempotency.NewMemoryStore(), "A1", testCodec{}, Config{LookupPageCap: pageCap})
	if err != nil {
		t.Fatal(err)
	}
	w := map[string]bool{}
	for _, id := range want {
		w[id] = true
	}
	return p.find(context.Background(), "BTC-USD", since, w)
}

// TestFindFullLastPage: a last page without a next link that holds as
// many rows as the pages before it (or a single page of venuePageSize
// rows) is confirmed by one read of the orders created no later than its
// last row: a list that ended there is complete, one whose link was
// dropped is not.
func TestFindFullLastPage(t *testing.T) {
	dropNext := func(on func(n int, first bool) bool) func(int, bool, []listRow, *string) ([]listRow, *string) {
		return func(n int, first bool, rows []listRow, next *string) ([]listRow, *string) {
			if on(n, first) {
				return rows, nil
			}
			return rows, next
		}
	}
	tests := []struct {
		name     string
		rows     int
		ties     int // how many of the oldest rows share one creation time
		size     int
		edit     func(int, bool, []listRow, *string) ([]listRow, *string)
		complete bool
		requests int
	}{
		{"two full pages, the list's end", 4, 0, 2, nil, true, 3},
		{"a single full page, the list's end", venuePageSize, 0, venuePageSize, nil, true, 2},
		{"a short last page", 5, 0, 2, nil, true, 3},
		{"a short single page", 7, 0, venuePageSize, nil, true, 1},
		{"the second page's link dropped", 6, 0, 2, dropNext(func(n int, _ bool) bool { return n == 2 }), false, 3},
		{"the single page's link dropped", venuePageSize + 1, 0, venuePageSize, dropNext(func(n int, _ bool) bool { return n == 1 }), false, 2},
		{"three rows share the last row's creation time", 4, 3, 2, nil, true, 4},
		{"a page's multiple share the last row's creation time", 4, 4, 2, nil, false, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rows := rowsOf(tt.rows)
			for i := len(rows) - tt.ties; i < len(rows); i++ {
				rows[i].CreatedAt = since.Add(time.Minute)
			}
			s := &scriptedList{rows: rows, size: tt.size, edit: tt.edit}
			l := findOn(t, s, 50, "absent")
			if got := l.err == nil; got != tt.complete {
				t.Fatalf("complete = %v (err %v), want %v", got, l.err, tt.complete)
			}
			if !tt.complete && !errors.Is(l.err, errLookupIncomplete) {
				t.Fatalf("err = %v, want errLookupIncomplete", l.err)
			}
			if s.served != tt.requests {
				t.Fatalf("%d requests %v, want %d", s.served, s.targets, tt.requests)
			}
		})
	}
}

// TestFindRepeatedRows: an order id listed twice means the pages shifted
// under the read (a row may have been skipped): the read is incomplete
// and "not found" is never concluded from it.
func TestFindRepeatedRows(t *testing.T) {
	t.Parallel()
	var first []listRow
	s := &scriptedList{rows: rowsOf(5), size: 2, edit: func(n int, _ bool, rows []listRow, next *string) ([]listRow, *string) {
		switch n {
		case 1:
			first = rows
		case 2:
			rows = first // the second page repeats the first: rows o-3 and o-4 are never shown
		}
		return rows, next
	}}
	l := findOn(t, s, 50, "c-3")
	if _, ok := l.found["c-3"]; ok || !errors.Is(l.err, errLookupIncomplete) {
		t.Fatalf("found %v, err %v; want no answer and an incomplete read", l.found, l.err)
	}
}

// TestFindCopies: one client_order_id in several rows. A live copy
// answers, wherever it is; a failed copy answers only from a read that saw
// every order; one order id listed failed and not failed is no answer.
func TestFindCopies(t *testing.T) {
	at := since.Add(time.Minute)
	row := func(id, state string, sec int) listRow {
		return listRow{ID: id, ClientOrderID: "ours", State: state, CreatedAt: at.Add(time.Duration(sec) * time.Second)}
	}
	tests := []struct {
		name    string
		rows    []listRow
		pageCap int
		wantID  string // "" for no answer
	}{
		{"a failed copy before a live one", []listRow{row("x-1", "failed", 9), row("x-2", "open", 8)}, 50, "x-2"},
		{"a failed copy pages before a live one", append(append([]listRow{row("x-1", "failed", 99)}, rowsOf(5)...), row("x-2", "filled", 0)), 50, "x-2"},
		{"a live copy before a failed one", []listRow{row("x-2", "open", 9), row("x-1", "failed", 8)}, 50, "x-2"},
		{"failed, the whole list read", []listRow{row("x-1", "failed", 9)}, 50, "x-1"},
		{"failed, the page cap reached", append([]listRow{row("x-1", "failed", 99)}, rowsOf(5)...), 1, ""},
		{"one order listed failed and open", []listRow{row("x-1", "failed", 9), row("x-1", "open", 9)}, 50, ""},
		{"one order listed open and failed", []listRow{row("x-1", "open", 9), row("x-1", "failed", 9)}, 50, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := findOn(t, &scriptedList{rows: tt.rows, size: 2}, tt.pageCap, "ours")
			s, ok := l.found["ours"]
			switch {
			case tt.wantID == "" && (ok || !errors.Is(l.err, errLookupIncomplete)):
				t.Fatalf("found %+v, err %v; want no answer from an incomplete read", s.facts, l.err)
			case tt.wantID != "" && (!ok || s.facts.ID != tt.wantID || l.err != nil):
				t.Fatalf("found %+v (%v), err %v; want %s", s.facts, ok, l.err, tt.wantID)
			}
		})
	}
}
