package transport

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

func TestDateSample(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 2, 14, 0, 0, 750_000_000, time.UTC)
	tests := []struct {
		name, date string
		want       time.Duration
		ok         bool
	}{
		{"same second", "Mon, 02 Nov 2026 14:00:00 GMT", -250 * time.Millisecond, true},
		{"3 min behind", "Mon, 02 Nov 2026 13:57:00 GMT", -3*time.Minute - 250*time.Millisecond, true},
		{"25 s ahead", "Mon, 02 Nov 2026 14:00:25 GMT", 25*time.Second - 250*time.Millisecond, true},
		{"RFC 850 form", "Monday, 02-Nov-26 14:00:00 GMT", -250 * time.Millisecond, true},
		{"asctime form", "Mon Nov  2 14:00:00 2026", -250 * time.Millisecond, true},
		{"missing", "", 0, false},
		{"garbage", "yesterday", 0, false},
		{"unix seconds", "1793628000", 0, false},
	}
	for _, tt := range tests {
		h := http.Header{}
		if tt.date != "" {
			h.Set("Date", tt.date)
		}
		got, ok := dateSample(h, at)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: dateSample = %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

// TestClockEstimate: the median of the last 5 samples, robust to one bad
// sample, with absurd samples ignored and sub-second estimates taken as 0.
func TestClockEstimate(t *testing.T) {
	t.Parallel()
	const s, m = time.Second, time.Minute
	tests := []struct {
		name     string
		samples  []time.Duration
		want     time.Duration
		measured bool
	}{
		{"none", nil, 0, false},
		{"agreeing clocks, rounding noise", []time.Duration{-250 * time.Millisecond, 400 * time.Millisecond, 100 * time.Millisecond}, 0, true},
		{"3 min behind", []time.Duration{-3 * m}, -3 * m, true},
		{"25 s ahead", []time.Duration{25 * s, 25*s + 300*time.Millisecond, 24*s + 800*time.Millisecond}, 25 * s, true},
		{"one bad sample among good", []time.Duration{-3 * m, -3 * m, 2 * m, -3 * m, -3 * m}, -3 * m, true},
		{"one absurd sample ignored", []time.Duration{25 * s, 25 * s, 365 * 24 * time.Hour, 25 * s}, 25 * s, true},
		{"only absurd samples", []time.Duration{-MaxClockOffset - s, MaxClockOffset + s}, 0, false},
		{"at the bound", []time.Duration{MaxClockOffset}, MaxClockOffset, true},
		{"only the last 5 count", []time.Duration{9 * m, 9 * m, 9 * m, 10 * s, 10 * s, 10 * s, 10 * s, 10 * s}, 10 * s, true},
		{"two samples: their mean", []time.Duration{10 * s, 20 * s}, 15 * s, true},
	}
	for _, tt := range tests {
		var sk clockSkew
		for _, x := range tt.samples {
			sk.observe(x)
		}
		got, measured := sk.get()
		if got != tt.want || measured != tt.measured {
			t.Errorf("%s: estimate %v, %v; want %v, %v", tt.name, got, measured, tt.want, tt.measured)
		}
	}
}

// TestClockSkewCorrectsNextRequests: after one answer from a venue whose
// clock is off, the next requests are signed (and BeforeSend told) on the
// venue's clock; answers without a usable Date change nothing.
func TestClockSkewCorrectsNextRequests(t *testing.T) {
	t.Parallel()
	const s, m = time.Second, time.Minute
	tests := []struct {
		name    string
		replies []reply
		want    time.Duration // the offset, to the second
		ok      bool
	}{
		{"venue 3 min behind", []reply{{status: 200, venueClock: -3 * m}}, -3 * m, true},
		{"venue 25 s ahead", []reply{{status: 200, venueClock: 25 * s}}, 25 * s, true},
		{"clocks agree", []reply{{status: 200}}, 0, true},
		{"no Date", []reply{{status: 200, noDate: true}}, 0, false},
		{"garbage Date", []reply{{status: 200, header: map[string]string{"Date": "not a date"}}}, 0, false},
		{"absurd Date", []reply{{status: 200, venueClock: -30 * 24 * time.Hour}}, 0, false},
		{"a 401 is a sample too", []reply{{status: 401, venueClock: -3 * m, body: `{}`}}, -3 * m, true},
		{"a 503 is a sample too", []reply{{status: 503, venueClock: 25 * s, body: `{}`}}, 25 * s, true},
		// Four answers measured the venue 40 s behind this machine; then
		// this machine's clock was stepped back 40 s, and the venue
		// refuses the stamp: its 401 alone sets the estimate, where the
		// median of five would take three more refusals to follow.
		{"a 401 the clock explains restarts the estimate", []reply{
			{status: 200, venueClock: -40 * s}, {status: 200, venueClock: -40 * s},
			{status: 200, venueClock: -40 * s}, {status: 200, venueClock: -40 * s},
			{status: 401, venueClock: 0, body: `{}`},
		}, 0, true},
		{"one absurd among good", []reply{
			{status: 200, venueClock: -3 * m}, {status: 200, venueClock: -3 * m},
			{status: 200, venueClock: 7 * 24 * time.Hour}, {status: 200, venueClock: -3 * m},
		}, -3 * m, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			clock := clockwork.NewFakeClockAt(t0)
			v := newVenue(t, clock, append(tt.replies, reply{status: 201, body: `{}`, venueClock: tt.replies[len(tt.replies)-1].venueClock})...)
			c := newTestClient(t, v, newEventLog(), Config{Retry: &RetryPolicy{}})
			for range tt.replies {
				c.Get(ctx, "/api/v2/crypto/trading/accounts/")
			}
			got, ok := c.ClockOffset()
			if ok != tt.ok || got.Round(s) != tt.want {
				t.Fatalf("ClockOffset = %v, %v; want about %v, %v", got, ok, tt.want, tt.ok)
			}
			if d := c.VenueNow().Sub(clock.Now()); d != got {
				t.Errorf("VenueNow is %v from the clock, want %v", d, got)
			}
			var signedAt time.Time
			if _, err := c.Send(ctx, "POST", "/o/", []byte(`{}`), func(at time.Time) error { signedAt = at; return nil }); err != nil {
				t.Fatal(err)
			}
			last := v.requests()[len(v.requests())-1]
			if want := clock.Now().Add(got); !signedAt.Equal(want) || last.timestamp != itoa(want.Unix()) {
				t.Errorf("signed at %v (x-timestamp %s), want %v", signedAt, last.timestamp, want)
			}
			if !last.validSig {
				t.Error("signature does not verify")
			}
			// Signed within a second of the venue's own clock.
			venueNow := clock.Now().Add(tt.replies[len(tt.replies)-1].venueClock)
			if !tt.ok {
				venueNow = clock.Now()
			}
			if d := signedAt.Sub(venueNow); d > s || d < -s {
				t.Errorf("signed %v from the venue's clock", d)
			}
		})
	}
}

// TestUnauthorizedNamesTheClock: a 401 stays final (one attempt) and, when
// the venue's clock is further off than a signature stays valid, says so
// with the measured offset; the measured offset corrects the next request.
func TestUnauthorizedNamesTheClock(t *testing.T) {
	t.Parallel()
	const s, m = time.Second, time.Minute
	tests := []struct {
		name    string
		offset  time.Duration
		mention string // "" for no clock hint
	}{
		{"venue 3 min behind", -3*m - 2*s, "differs from this machine's by 3m2s (it is behind this machine's); fix the system clock"},
		{"venue 45 s ahead", 45 * s, "differs from this machine's by 45s (it is ahead of this machine's)"},
		{"venue 25 s ahead: not the clock", 25 * s, ""},
		{"far beyond the bound still named", -2 * time.Hour, "by 2h0m0s (it is behind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			clock := clockwork.NewFakeClockAt(t0)
			bad := reply{status: 401, venueClock: tt.offset, body: `{"type":"client_error","errors":[{"detail":"Invalid signature.","attr":null}]}`}
			v := newVenue(t, clock, bad, bad)
			c := newTestClient(t, v, newEventLog())
			_, err := c.Get(ctx, "/api/v2/crypto/trading/accounts/")
			var se *StatusError
			if !asStatus(err, &se) || se.StatusCode != 401 || se.Attempts != 1 {
				t.Fatalf("err = %v, want a final 401", err)
			}
			if tt.mention == "" {
				if se.ClockOffset != 0 || strings.Contains(err.Error(), "clock") {
					t.Errorf("err = %v: blames the clock", err)
				}
				return
			}
			if !strings.Contains(err.Error(), tt.mention) || se.ClockOffset.Round(s) != tt.offset.Round(s) {
				t.Errorf("err = %v (ClockOffset %v), want it to mention %q", err, se.ClockOffset, tt.mention)
			}
			// The next request is signed on the venue's clock (within the
			// bound), so its 401 is not the clock's fault.
			_, err = c.Get(ctx, "/api/v2/crypto/trading/accounts/")
			if tt.offset < MaxClockOffset && tt.offset > -MaxClockOffset {
				if !asStatus(err, &se) || se.ClockOffset != 0 {
					t.Errorf("second 401 still blames the clock: %v", err)
				}
			}
		})
	}
}

func asStatus(err error, se **StatusError) bool {
	e, ok := err.(*StatusError)
	*se = e
	return ok
}

// TestClockOffsetLogged: a change of the estimate is logged once, not on
// every answer.
func TestClockOffsetLogged(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	behind := reply{status: 200, venueClock: -3 * time.Minute}
	v := newVenue(t, clock, behind, behind, behind)
	log := newEventLog()
	c := newTestClient(t, v, log)
	for range 3 {
		if _, err := c.Get(ctx, "/a/"); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	for _, l := range log.lines() {
		if strings.Contains(l, `"clock_offset"`) {
			n++
			if !strings.Contains(l, `"level":"info"`) {
				t.Errorf("logged at the wrong level: %s", l)
			}
		}
	}
	if n != 1 {
		t.Errorf("offset logged %d times, want once", n)
	}
}

// FuzzDateSample feeds Date headers, which the venue controls, to the
// clock estimate: a sample is either refused or moves the estimate no
// further than MaxClockOffset.
func FuzzDateSample(f *testing.F) {
	for _, s := range []string{"Mon, 02 Nov 2026 14:00:00 GMT", "Monday, 02-Nov-26 14:00:00 GMT", "Mon Nov  2 14:00:00 2026",
		"Sat, 01 Jan 0000 00:00:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT", "", "garbage"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, date string) {
		h := http.Header{}
		h.Set("Date", date)
		var sk clockSkew
		if sample, ok := dateSample(h, t0); ok {
			sk.observe(sample)
		}
		if got, _ := sk.get(); got > MaxClockOffset || got < -MaxClockOffset {
			t.Fatalf("Date %q moved the estimate to %v", date, got)
		}
	})
}

// TestIMFFixdateAgreesWithParseTime: the fast path reads the form servers
// send, and every date it reads, http.ParseTime reads as the same instant;
// the rest is left to http.ParseTime.
func TestIMFFixdateAgreesWithParseTime(t *testing.T) {
	t.Parallel()
	for _, at := range []time.Time{t0.Truncate(time.Second), time.Date(2028, 2, 29, 23, 59, 59, 0, time.UTC), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)} {
		v := at.Format(http.TimeFormat)
		if got, ok := parseIMFFixdate(v); !ok || !got.Equal(at) {
			t.Errorf("parseIMFFixdate(%q) = %v, %v; want %v, true", v, got, ok, at)
		}
	}
	for _, v := range []string{
		"Mon, 29 Feb 2027 00:00:00 GMT", // no such day
		"Mon, 31 Apr 2026 00:00:00 GMT",
		"Mon, 00 Nov 2026 14:00:00 GMT",
		"Mon, 02 Nov 2026 24:00:00 GMT",
		"Mon, 02 Nov 2026 14:60:00 GMT",
		"Mon, 02 Nov 2026 14:00:60 GMT",
		"Mon, 02 Nov 2026 14:00:00 UTC",
		"Mon, 02 nov 2026 14:00:00 GMT", // time.Parse's own business
		"Mon, 02 Nov 2026 1a:00:00 GMT",
		"onT, 02 Nov 2026 14:00:00 GMT",
		"Mon, 02 anF 2026 14:00:00 GMT",
		"Monday, 02-Nov-26 14:00:00 GMT",
	} {
		if got, ok := parseIMFFixdate(v); ok {
			t.Errorf("parseIMFFixdate(%q) = %v, want it left to http.ParseTime", v, got)
		}
	}
}

// FuzzIMFFixdate: whatever the fast path reads, http.ParseTime reads as the
// same instant.
func FuzzIMFFixdate(f *testing.F) {
	for _, s := range []string{"Mon, 02 Nov 2026 14:00:00 GMT", "Sun, 29 Feb 2032 23:59:59 GMT", "Mon, 31 Apr 2026 00:00:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, ok := parseIMFFixdate(v)
		if !ok {
			return
		}
		want, err := http.ParseTime(v)
		if err != nil || !got.Equal(want) {
			t.Fatalf("parseIMFFixdate(%q) = %v; http.ParseTime: %v, %v", v, got, want, err)
		}
	})
}
